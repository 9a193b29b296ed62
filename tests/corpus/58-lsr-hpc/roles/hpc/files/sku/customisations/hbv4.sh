#!/bin/bash -eu

# there are no current topology optimisations for this hardware.
rm -f "$TOPOLOGY_FILE"
rm -f "$TOPOLOGY_GRAPH"
