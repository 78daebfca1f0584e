#!/usr/bin/env bash
# A local base image for shoal's containers where no registry is reachable: Debian bookworm
# (the release of the python:3.11-slim-bookworm image the Dockerfile names by default) made by
# debootstrap from this machine's Debian mirror and imported into podman. Idempotent: an image
# already there is kept (SHOAL_BASE_REBUILD=1 makes it again). Prints the image's name.
#
#   scripts/container_base.sh            # -> localhost/shoal-base:bookworm
#   shoal launch local --base localhost/shoal-base:bookworm -- shoal train ...
#
# Needs root, podman and debootstrap (apt-get install podman buildah runc debootstrap).
set -euo pipefail
image=${SHOAL_BASE_IMAGE:-localhost/shoal-base:bookworm}
suite=bookworm
for tool in podman debootstrap; do
  if ! command -v "$tool" >/dev/null; then
    echo "container_base.sh: $tool is not installed; apt-get install podman buildah runc debootstrap" >&2
    exit 2
  fi
done
if [ -z "${SHOAL_BASE_REBUILD:-}" ] && podman image exists "$image"; then
  echo "$image"
  exit 0
fi
# The mirror apt already uses here (one-line or deb822 sources), else Debian's own.
mirror=${SHOAL_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$({ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } \
    | awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }')
fi
if [ -z "$mirror" ]; then
  mirror=$({ cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } \
    | awk '$1 == "URIs:" && $2 !~ /security/ { print $2; exit }')
fi
mirror=${mirror:-http://deb.debian.org/debian}
root=$(mktemp -d /var/tmp/shoal-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "container_base.sh: debootstrap $suite from $mirror" >&2
# python3-venv: the Dockerfile makes /opt/venv; ca-certificates: pip's TLS; the Dockerfile's
# own packages (procps, rsync, openssh-client) come with its apt-get step.
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
  "$suite" "$root" "$mirror" >&2
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$image" >&2
echo "$image"
