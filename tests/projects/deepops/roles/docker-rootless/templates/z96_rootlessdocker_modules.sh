#!/usr/bin/env bash
export MODULEPATH="${MODULEPATH:+$MODULEPATH:}{{ rootlessdocker_install_dir }}/modulefiles"
