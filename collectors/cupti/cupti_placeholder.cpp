// Replaced by the CUPTI collector.
