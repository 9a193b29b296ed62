# The floor for a no-op check of the sysctl scenario: what a careful person
# would send in one `ssh host sh -s`, checking the same state nodeprov does
# (live values, and the value the drop-ins give at boot) with builtins and
# one `cat` of every sysctl.d file. Prints one line per drifting key.
read -r swappiness </proc/sys/vm/swappiness
read -r overcommit </proc/sys/vm/overcommit_memory
[ "$swappiness" = 10 ] || echo "drift: vm.swappiness live $swappiness"
[ "$overcommit" = 1 ] || echo "drift: vm.overcommit_memory live $overcommit"
boot=$(cat /usr/lib/sysctl.d/*.conf /run/sysctl.d/*.conf /etc/sysctl.d/*.conf /etc/sysctl.conf 2>/dev/null)
case $boot in *"vm.swappiness = 10"* | *"vm.swappiness=10"*) ;; *) echo "drift: vm.swappiness at boot" ;; esac
case $boot in *"vm.overcommit_memory = 1"* | *"vm.overcommit_memory=1"*) ;; *) echo "drift: vm.overcommit_memory at boot" ;; esac
