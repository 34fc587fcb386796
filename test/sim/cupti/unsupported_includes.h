// Headers declaring the functions unsupported.cpp defines (all of CUPTI's).
#pragma once

#include <cupti.h>
// After cupti.h, which it needs.
#include <Openacc/cupti_openacc.h>
#include <cupti_pcsampling.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include "internal.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
