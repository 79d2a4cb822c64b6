"""Any torch nn.Module on the meta device -> [Op] through a dispatch mode (torch imported lazily, only
here). Filled by the tracing work."""
