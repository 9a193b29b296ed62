#!/bin/bash
# Submits a sharded nodeprov run to Slurm: an array of SHARDS tasks, then a
# merge job that starts once every task has ended, whatever its exit code.
#
#   deploy/slurm/submit.sh SHARDS PLAYBOOK INVENTORY REPORTS [sbatch options...]
#
# REPORTS must be new or empty and visible from every node (shared storage):
# a stale shard report from an earlier run would be merged. NODEPROV (the
# binary, default `nodeprov` on PATH), NODEPROV_COMMAND (check or apply),
# NODEPROV_ARGS (more nodeprov flags) and NODEPROV_BECOME_PASSWORD_FILE (a
# file holding the become password, chmod 600, visible from every node) are
# passed on to the jobs, with PATH, HOME and USER, and nothing else. Prints
# the array job's id and the merge job's id.
set -eu
if [ "$#" -lt 4 ]; then
    sed -n '2,15s/^# \{0,1\}//p' "$0" >&2
    exit 1
fi
# slurmctld keeps a job's environment in its state (and accounting may store
# it), so a secret must not be in it; the jobs would not get it anyway.
for secret in NODEPROV_BECOME_PASSWORD NODEPROV_SSH_PASSWORD NODEPROV_KEY_PASSPHRASE; do
    if [ -n "${!secret+set}" ]; then
        echo "$secret is not passed to Slurm jobs, whose environment slurmctld keeps;" \
            "for the become password, set NODEPROV_BECOME_PASSWORD_FILE to a file only you can read" >&2
        exit 1
    fi
done
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
if [ -n "${NODEPROV_BECOME_PASSWORD_FILE:-}" ]; then
    # Absolute for the jobs' --chdir; -s keeps a symlink, which nodeprov refuses.
    NODEPROV_BECOME_PASSWORD_FILE=$(realpath -es "$NODEPROV_BECOME_PASSWORD_FILE")
    export NODEPROV_BECOME_PASSWORD_FILE
fi
# Names only, without ALL: the jobs get these and SLURM_*, and sbatch reads
# the values here, so none is on a command line.
export=PATH,HOME,USER,NODEPROV,NODEPROV_COMMAND,NODEPROV_ARGS,NODEPROV_PLAYBOOK,NODEPROV_INVENTORY,NODEPROV_REPORTS,NODEPROV_BECOME_PASSWORD_FILE
array=$(sbatch --parsable --export="$export" --array="0-$((shards - 1))" --chdir="$NODEPROV_REPORTS" "$@" "$here/nodeprov-shard.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --export="$export" --dependency="afterany:$array" --chdir="$NODEPROV_REPORTS" "$@" "$here/nodeprov-merge.sbatch")
echo "$array ${merge%%;*}"
