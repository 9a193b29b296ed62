#!/usr/bin/env csh
setenv MODULEPATH = "$MODULEPATH:{{ hpcsdk_install_dir }}/modulefiles)"
