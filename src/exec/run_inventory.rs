//! The run's inventory as its tasks change it (`group_by`, `add_host`).

use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::load::inventory::Inventory;
use crate::modules::InventoryChange;

/// Changed when the task runs, as Ansible's strategy changes its inventory
/// when it reads the task's result: the task is `changed` only when its
/// change is new, and the plays after its own see it. In its own play a
/// host it added is in `hostvars` and reachable by `delegate_to`, and a
/// host that joined a group has its variables; the play's hosts and
/// `groups` stay those it started with, since each host plans its play on
/// its own.
pub(crate) struct RunInventory(Mutex<Live>);

type Vars = Map<String, Value>;

struct Live {
    inventory: Inventory,
    /// Changed since the plays last took it.
    unsettled: bool,
}

impl RunInventory {
    pub fn new(inventory: Inventory) -> Self {
        RunInventory(Mutex::new(Live {
            inventory,
            unsettled: false,
        }))
    }

    /// Makes `host`'s task's changes; true when any was new.
    pub fn change(&self, host: &str, changes: &[InventoryChange]) -> Result<bool, String> {
        let mut live = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = false;
        for change in changes {
            changed |= match change {
                InventoryChange::Join { group, parents } => {
                    live.inventory.join_group(host, group, parents)?
                }
                InventoryChange::Host { name, groups, vars } => {
                    live.inventory.add_run_host(name, groups, vars.clone())?
                }
            };
        }
        live.unsettled |= changed;
        Ok(changed)
    }

    /// A host's variables as `Inventory::host_vars` gives them, with what
    /// the run's tasks changed so far; None for a host it does not hold.
    pub fn host_vars(&self, host: &str) -> Option<Vars> {
        let live = self.0.lock().unwrap_or_else(|e| e.into_inner());
        live.inventory
            .has_host(host)
            .then(|| live.inventory.host_vars(host))
    }

    /// The same for a host's run or connection (`Inventory::run_vars`),
    /// for any host: one it does not hold gets the `all` variables.
    pub fn run_vars(&self, host: &str) -> (bool, Vars) {
        let live = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (live.inventory.has_host(host), live.inventory.run_vars(host))
    }

    /// The inventory with every change so far, when there was one since
    /// the last call.
    pub fn settled(&self) -> Option<Inventory> {
        let mut live = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !std::mem::take(&mut live.unsettled) {
            return None;
        }
        live.inventory.settle();
        Some(live.inventory.clone())
    }
}
