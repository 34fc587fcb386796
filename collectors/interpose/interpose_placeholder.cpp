// Replaced by the runtime/allocator wrappers.
