#!/usr/bin/env bash

export SPACK_ROOT="{{ spack_install_dir }}"
. "${SPACK_ROOT}/share/spack/setup-env.sh"
