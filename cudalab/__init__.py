"""cudalab: the CUDA labs' harness (work in progress; see issue "Labs in CUDA")."""
