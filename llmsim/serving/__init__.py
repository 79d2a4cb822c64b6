"""An engine under load: continuous batching, chunked prefill, request rates, with each step timed by
timing/. Filled by the serving work."""
