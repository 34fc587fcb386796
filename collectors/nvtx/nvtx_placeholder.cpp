// Replaced by the NVTX injection.
