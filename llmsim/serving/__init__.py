"""An engine under load: continuous batching, chunked prefill, request rates, with each step timed by
timing/ (step_cost), scheduled as the engine does (scheduler, engine_limits), fed by workload, reported
by results. The entry point is serve()."""
