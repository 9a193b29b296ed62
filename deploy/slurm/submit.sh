#!/bin/bash
# Submits a sharded nodeprov run to Slurm: an array of SHARDS tasks, then a
# merge job that starts once every task has ended, whatever its exit code.
#
#   deploy/slurm/submit.sh SHARDS PLAYBOOK INVENTORY REPORTS [sbatch options...]
#
# REPORTS must be new or empty and visible from every node (shared storage):
# a stale shard report from an earlier run would be merged. NODEPROV (the
# binary, default `nodeprov` on PATH), NODEPROV_COMMAND (check or apply) and
# NODEPROV_ARGS (more nodeprov flags) are passed on to the jobs. Prints the
# array job's id and the merge job's id.
set -eu
if [ "$#" -lt 4 ]; then
    sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
    exit 1
fi
shards=$1 playbook=$2 inventory=$3 reports=$4
shift 4
case $shards in '' | *[!0-9]* | 0) echo "SHARDS must be a positive number, got '$shards'" >&2; exit 1 ;; esac
if [ -n "$(ls -A "$reports" 2>/dev/null)" ]; then
    echo "$reports is not empty: give each run its own report folder" >&2
    exit 1
fi
mkdir -p "$reports"
here=$(cd "$(dirname "$0")" && pwd)
NODEPROV_PLAYBOOK=$(realpath -e "$playbook")
NODEPROV_INVENTORY=$(realpath -e "$inventory")
NODEPROV_REPORTS=$(realpath -e "$reports")
export NODEPROV_PLAYBOOK NODEPROV_INVENTORY NODEPROV_REPORTS
array=$(sbatch --parsable --array="0-$((shards - 1))" --chdir="$NODEPROV_REPORTS" "$@" "$here/nodeprov-shard.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterany:$array" --chdir="$NODEPROV_REPORTS" "$@" "$here/nodeprov-merge.sbatch")
echo "$array ${merge%%;*}"
