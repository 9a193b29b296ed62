#!/usr/bin/env bash
export MODULEPATH="${MODULEPATH:+$MODULEPATH:}{{ hpcsdk_install_dir }}/modulefiles"
