#!/usr/bin/env csh

setenv SPACK_ROOT {{ spack_install_dir }}
source $SPACK_ROOT/share/spack/setup-env.csh
