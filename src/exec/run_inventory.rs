//! The run's inventory as its tasks change it (`group_by`, `add_host`).

use std::sync::Mutex;

use crate::load::inventory::Inventory;
use crate::modules::InventoryChange;

/// Changed when the task runs, as Ansible's strategy changes its inventory
/// when it reads the task's result: the task is `changed` only when its
/// change is new, and the plays after its own see it. Its own play keeps
/// the inventory it started with, since each host plans its play on its
/// own.
pub(crate) struct RunInventory(Mutex<Live>);

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
