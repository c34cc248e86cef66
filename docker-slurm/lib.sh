# Shared by docker-slurm's scripts: the container engine and compose tool, image
# names and where the cluster's secrets live. Sourced, not run.
ds_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$ds_dir/.." && pwd)
# Secrets (munge key, database password) and the image build context. Outside
# the compose directory's volumes, kept across `down` unless --purge.
state=${DOCKER_SLURM_STATE:-$ds_dir/.state}
export DOCKER_SLURM_SECRETS=$state/secrets
export DOCKER_SLURM_IMAGE=${DOCKER_SLURM_IMAGE:-localhost/mlsched/slurm:latest}
base_image=localhost/mlsched/debian12-base:latest
project=docker-slurm

ds_log() { printf '%s docker-slurm: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
ds_die() { ds_log "error: $*"; exit 1; }

# podman when present (with runc and cgroupfs, see containers.conf), else Docker.
engine=${DOCKER_SLURM_ENGINE:-}
if [ -z "$engine" ]; then
  if command -v podman >/dev/null; then engine=podman
  elif command -v docker >/dev/null; then engine=docker
  else ds_die "neither podman nor docker is installed (docker-slurm/install-deps installs podman)"
  fi
fi
if [ "$engine" = podman ]; then
  export CONTAINERS_CONF=${CONTAINERS_CONF:-$ds_dir/containers.conf}
  compose=(podman-compose)
elif docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  compose=(docker-compose)
fi

ds_compose() { "${compose[@]}" -p "$project" -f "$ds_dir/compose.yaml" "$@"; }
ds_exec() { "$engine" exec "$@"; }
# Every container of the cluster, in start order.
ds_containers=(ds-mariadb ds-slurmdbd ds-slurmctld ds-gpu01 ds-gpu02 ds-gpu03 ds-gpu04 ds-gpu05 ds-gpu06 ds-login)

# What the debootstrapped base image was built from (its label docker-slurm.packages).
ds_packages_digest() { sha256sum < "$ds_dir/packages.txt" | cut -c1-16; }

# Prints the base image to build on: $DOCKER_SLURM_BASE, the debootstrapped one if
# it exists, Docker Hub's debian:12 if a registry answers, else builds it here.
ds_base() {
  if [ -n "${DOCKER_SLURM_BASE:-}" ]; then echo "$DOCKER_SLURM_BASE"; return; fi
  # The debootstrapped base holds packages.txt; a changed list needs a new base.
  if [ "$("$engine" image inspect -f '{{ index .Config.Labels "docker-slurm.packages" }}' "$base_image" 2>/dev/null)" = \
       "$(ds_packages_digest)" ]; then
    echo "$base_image"; return
  fi
  if timeout 60 "$engine" pull -q docker.io/library/debian:12 >/dev/null 2>&1; then
    echo docker.io/library/debian:12; return
  fi
  ds_log "no registry answered: building $base_image with debootstrap (a few minutes, once)"
  "$ds_dir/build-base" >&2 || ds_die "build-base failed"
  echo "$base_image"
}
