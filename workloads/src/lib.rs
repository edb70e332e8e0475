//! Deterministic AI-metadata workloads and the runner that times them over the adapters.
