#pragma once
// Marks a symbol for the dynamic table (use inside extern "C"); the version
// script (libprof.map) still decides which names stay global.
#define EXPORT_SYMBOL __attribute__((visibility("default")))
