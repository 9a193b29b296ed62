module github.com/NVIDIA/deepops/roles/prometheus-slurm-exporter/files/exporter

go 1.22
