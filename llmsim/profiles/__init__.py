"""Readers of torch.profiler, Nsight Compute and Nsight Systems exports -> measured kernels placed on the
roofline beside the prediction. Filled by the profiles work."""
