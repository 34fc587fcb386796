// The report page (<stem>.report.html) and folded stacks (<stem>.stacks.txt)
// of a window. The page is one self-contained HTML file: the window's
// numbers as JSON (the Summary's, plus a downsampled timeline, flame-graph
// trees and memory series) and the page's own script and style
// (exporters/report/), embedded at build time. It makes no network request.
#pragma once

#include <string>
#include <vector>

#include "model/window.h"
#include "exporters/summary/summary.h"

namespace prof {

class WindowIndex;
class CompactWindow;

// Bounds that keep a page small whatever the window's size.
inline constexpr size_t kTimelineBins = 2000;      // items a lane keeps apart: span / this
inline constexpr size_t kMemoryPoints = 1000;      // points per memory series
inline constexpr int kTensorSeriesKind = 100;      // a memory series of PyTorch's tensors (page.js's memKind)
inline constexpr size_t kTimelineSteps = 2000;     // step spans in the timeline; more steps are drawn in runs
inline constexpr double kFlameMinFraction = 1e-4;  // smaller flame nodes join "(other)"

// One window's part of the page, as a JSON object. `label` names it in the
// page (a rank, a file); `trace_file` is the trace the Perfetto command
// opens ("" when there is none).
std::string ReportWindowJson(const Window& window, const WindowIndex& index, const Summary& summary,
                             const std::string& label, const std::string& trace_file);
std::string ReportWindowJson(const CompactWindow& window, const WindowIndex& index, const Summary& summary,
                             const std::string& label, const std::string& trace_file);

// The page: `windows` are ReportWindowJson objects (one tab each when there
// are several); `job_json`, when not empty, is the merged job's view.
std::string RenderReportPage(const std::string& title, const std::vector<std::string>& windows,
                             const std::string& job_json = "");

// Kernel time by the Python stack that launched it, one line per distinct
// stack: "frame;frame;...;cudaLaunchKernel;kernel <ns>", outermost frame
// first. The lines add up to the window's kernel time.
std::string FoldedStacks(const Window& window, const WindowIndex& index);
std::string FoldedStacks(const CompactWindow& window, const WindowIndex& index);

}  // namespace prof
