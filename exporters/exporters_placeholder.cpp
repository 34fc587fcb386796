// Replaced by the chrome trace and summary exporters.
