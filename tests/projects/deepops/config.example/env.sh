# This file acts as a location to override the default configurations of deepops/scripts/*
# Many of the scripts in this directory define global variables and set reasonable defaults
# Global variables (in all caps) that are defined here will be automatically sourced and used in all scripts
# See deepops/scripts/common.sh for implementation details

DEEPOPS_EXAMPLE_VAR=""

# DeepOps version reported in script debug output.
# Defaults to the checkout's git tag description; uncomment to override.
# DEEPOPS_VERSION=""
