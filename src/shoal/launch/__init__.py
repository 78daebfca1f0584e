"""`shoal launch`: from one machine to a cluster. For a `shoal train` command, write what a Slurm
cluster, Kubernetes (KubeRay), GCP or AWS (Ray's cluster launcher) or Vertex AI needs to run it on
a Ray of its own, with the images (Docker, Apptainer) it runs in; one module per target."""
