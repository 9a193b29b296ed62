#!/bin/sh
# Runs the sharded fleet check on the current kubectl context: the shared
# config, the Indexed Job, then the merge Job once every shard is complete.
# Each run writes under its own folder of the reports volume (RUN), so a
# shard report of an earlier run is never merged. Exits with the merge pod's
# exit code (the fleet's).
set -eu
here=$(dirname "$0")
run=${RUN:-fleet-check-$(date -u +%Y%m%dT%H%M%SZ)}
with_run() { sed "s/value: \"fleet-check\"/value: \"$run\"/" "$1"; }
# Until the Job is Complete (returns) or Failed (returns 1).
wait_job() {
    while :; do
        done=$(kubectl get job "$1" -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
        case " $done " in
        *" Complete "*) return 0 ;;
        *" Failed "*) echo "job $1 failed" >&2; return 1 ;;
        esac
        sleep 10
    done
}
# The SSH key is in none of these files: the Secret is made from the key
# files (ssh-secret.yaml says how), never applied from here.
if ! kubectl get secret nodeprov-ssh >/dev/null; then
    echo "no Secret nodeprov-ssh: create it as $here/ssh-secret.yaml says" >&2
    exit 1
fi
kubectl apply -f "$here/config.yaml"
kubectl delete job nodeprov-shards nodeprov-merge --ignore-not-found
with_run "$here/job-shards.yaml" | kubectl apply -f -
wait_job nodeprov-shards
with_run "$here/job-merge.yaml" | kubectl apply -f -
wait_job nodeprov-merge || true
kubectl logs job/nodeprov-merge
pod=$(kubectl get pods -l job-name=nodeprov-merge -o jsonpath='{.items[0].metadata.name}')
exit "$(kubectl get pod "$pod" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')"
