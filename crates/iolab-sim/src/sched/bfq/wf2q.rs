//! B-WF2Q+ for BFQ's queues (`block/bfq-wf2q.c`, 6.1), flat: every queue
//! is in the root group (no cgroups).
//!
//! Each I/O class (RT, BE, IDLE) has a service tree with a virtual time
//! `vtime` and the sum `wsum` of the weights of its entities. A queue that
//! becomes busy is *activated*: it gets a virtual start time S (the tree's
//! vtime, or its old finish time if it is still remembered in the idle
//! tree and later) and finish time F = S + budget·2^22/weight, and joins
//! the active tree, ordered by F. The next queue to serve is, in the
//! highest class with active queues, the eligible one (S ≤ vtime) with the
//! smallest F; if none is eligible the vtime jumps to the smallest S.
//! Serving `n` sectors advances the vtime by n·2^22/wsum. An expired queue
//! is requeued with F recomputed from the service it actually received
//! (and S = F), or deactivated: kept in the idle tree while F > vtime, so
//! that a queue coming back soon cannot jump the line.
//!
//! Kernel detail not reproduced: `bfq_first_active_entity` walks the
//! augmented red-black tree and can, depending on the tree's shape, pick
//! an eligible entity other than the one with the smallest finish time;
//! the simulator always picks the smallest, as B-WF2Q+ specifies.

use super::queue::QueueId;
use super::{class_idx, Bfq, CL_IDLE_TIMEOUT_J, IOPRIO_NR_LEVELS, LONG_AGO, WEIGHT_CONVERSION_COEFF};
use std::collections::BTreeMap;

/// `WFQ_SERVICE_SHIFT`.
const SERVICE_SHIFT: u32 = 22;

/// Which tree an entity is on (`entity->tree`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Tree {
    None,
    Active,
    Idle,
}

/// `struct bfq_entity` of a queue.
#[derive(Clone, Debug)]
pub(super) struct Entity {
    pub start: u64,
    pub finish: u64,
    pub service: i64,
    pub budget: i64,
    pub weight: u32,
    pub orig_weight: u32,
    pub new_weight: u32,
    pub prio_changed: bool,
    pub on_st_or_in_serv: bool,
    pub tree: Tree,
    /// Its key on the tree it is on: the finish time when inserted and an
    /// insertion number (equal finish times keep their order). Linux
    /// removes a node by pointer; the key is what finds it here.
    pub key: (u64, u64),
}

impl Entity {
    pub fn new(weight: u32) -> Entity {
        Entity {
            start: 0,
            finish: 0,
            service: 0,
            budget: 0,
            weight,
            orig_weight: weight,
            new_weight: weight,
            prio_changed: false,
            on_st_or_in_serv: false,
            tree: Tree::None,
            key: (0, 0),
        }
    }
}

/// `struct bfq_service_tree`.
#[derive(Clone, Debug, Default)]
pub(super) struct ServiceTree {
    pub active: BTreeMap<(u64, u64), QueueId>,
    pub idle: BTreeMap<(u64, u64), QueueId>,
    pub vtime: u64,
    pub wsum: u64,
}

/// `struct bfq_sched_data` of the root group.
#[derive(Clone, Debug)]
pub(super) struct SchedData {
    pub in_service: Option<QueueId>,
    pub next_in_service: Option<QueueId>,
    pub st: [ServiceTree; 3],
    pub class_idle_last_service: i64,
    seq: u64,
}

impl Default for SchedData {
    fn default() -> Self {
        SchedData {
            in_service: None,
            next_in_service: None,
            st: Default::default(),
            class_idle_last_service: LONG_AGO,
            seq: 0,
        }
    }
}

/// `bfq_gt`: a after b, in wrapping arithmetic.
fn gt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// `bfq_delta`: service scaled by weight.
pub(super) fn delta(service: u64, weight: u64) -> u64 {
    ((service as u128) << SERVICE_SHIFT).checked_div(weight as u128).unwrap_or(0) as u64
}

/// `bfq_weight_to_ioprio`.
fn weight_to_ioprio(weight: u32) -> u8 {
    (IOPRIO_NR_LEVELS as i64 - (weight / WEIGHT_CONVERSION_COEFF) as i64).max(0) as u8
}

impl Bfq {
    fn st_of(&self, id: QueueId) -> usize {
        class_idx(self.queues[id].ioprio_class)
    }

    /// `bfq_calc_finish`.
    fn calc_finish(&mut self, id: QueueId, service: i64) {
        let e = &mut self.queues[id].e;
        e.finish = e.start.wrapping_add(delta(service.max(0) as u64, e.weight as u64));
    }

    fn insert_tree(&mut self, st: usize, id: QueueId, idle: bool) {
        self.sd.seq += 1;
        let e = &mut self.queues[id].e;
        let k = (e.finish, self.sd.seq);
        e.key = k;
        if idle {
            e.tree = Tree::Idle;
            self.sd.st[st].idle.insert(k, id);
        } else {
            e.tree = Tree::Active;
            self.sd.st[st].active.insert(k, id);
        }
    }

    /// `bfq_active_insert` (and `list_add` to the active list's head).
    fn active_insert(&mut self, st: usize, id: QueueId) {
        self.insert_tree(st, id, false);
        self.active_list.insert(0, id);
    }

    /// `bfq_active_extract`.
    fn active_extract(&mut self, st: usize, id: QueueId) {
        let e = &mut self.queues[id].e;
        self.sd.st[st].active.remove(&e.key);
        e.tree = Tree::None;
        self.active_list.retain(|&q| q != id);
    }

    /// `bfq_idle_insert`.
    fn idle_insert(&mut self, st: usize, id: QueueId) {
        self.insert_tree(st, id, true);
    }

    /// `bfq_idle_extract`.
    fn idle_extract(&mut self, st: usize, id: QueueId) {
        let e = &mut self.queues[id].e;
        self.sd.st[st].idle.remove(&e.key);
        e.tree = Tree::None;
    }

    /// `bfq_forget_entity`: off the scheduler; its weight leaves `wsum`.
    fn forget_entity(&mut self, st: usize, id: QueueId) {
        let e = &mut self.queues[id].e;
        e.on_st_or_in_serv = false;
        self.sd.st[st].wsum -= e.weight as u64;
    }

    /// `bfq_forget_idle`: with nothing active, the vtime moves to the
    /// last idle finish; an idle entity whose finish has passed is dropped.
    fn forget_idle(&mut self, st: usize) {
        let t = &self.sd.st[st];
        let last = t.idle.keys().next_back().map(|k| k.0);
        if t.active.is_empty() && last.is_some_and(|f| !gt(f, t.vtime)) {
            self.sd.st[st].vtime = last.expect("checked");
        }
        let t = &self.sd.st[st];
        if let Some((&(f, _), &id)) = t.idle.iter().next() {
            if !gt(f, t.vtime) {
                self.idle_extract(st, id);
                self.forget_entity(st, id);
                self.maybe_free(id);
            }
        }
    }

    /// `__bfq_entity_update_weight_prio`: apply a pending weight or class
    /// change; returns the (possibly new) service tree.
    pub(super) fn update_weight_prio(&mut self, old_st: usize, id: QueueId, update_class_too: bool) -> usize {
        if !self.queues[id].e.prio_changed {
            return old_st;
        }
        let old_weight = self.queues[id].e.weight;
        self.sd.st[old_st].wsum -= old_weight as u64;
        {
            let q = &mut self.queues[id];
            if q.e.new_weight != q.e.orig_weight {
                q.e.orig_weight = q.e.new_weight.clamp(1, 1000);
                q.ioprio = weight_to_ioprio(q.e.orig_weight);
            }
            if update_class_too {
                q.ioprio_class = q.new_ioprio_class;
            }
            if q.ioprio_class == q.new_ioprio_class {
                q.e.prio_changed = false;
            }
        }
        let new_st = self.st_of(id);
        let new_weight = self.queues[id].e.orig_weight * self.queues[id].wr_coeff;
        if old_weight != new_weight {
            self.weights_tree_remove(id);
        }
        self.queues[id].e.weight = new_weight;
        if old_weight != new_weight && self.queues[id].wr_coeff == 1 {
            self.weights_tree_add(id);
        }
        self.sd.st[new_st].wsum += new_weight as u64;
        if new_st != old_st {
            self.queues[id].e.start = self.sd.st[new_st].vtime;
        }
        new_st
    }

    /// `bfq_bfqq_served`: charge `served` sectors; the tree's vtime moves.
    pub(super) fn bfqq_served(&mut self, id: QueueId, served: i64) {
        let now_j = self.jif();
        let q = &mut self.queues[id];
        if q.service_from_backlogged == 0 {
            q.first_io_time = now_j;
        }
        if q.wr_coeff > 1 {
            q.service_from_wr += served.max(0) as u64;
        }
        q.service_from_backlogged += served.max(0) as u64;
        q.e.service += served;
        let st = self.st_of(id);
        let t = &mut self.sd.st[st];
        t.vtime = t.vtime.wrapping_add(delta(served.max(0) as u64, t.wsum));
        self.forget_idle(st);
    }

    /// `bfq_bfqq_charge_time`: charge a slow queue for the time it held
    /// the device, as a fraction of the maximum budget per timeout.
    pub(super) fn charge_time(&mut self, id: QueueId, time_ms: u64) {
        // jiffies_to_msecs(bfq_timeout): the constant HZ/8, 124 ms.
        let timeout_ms = self.hz.to_ms(super::BFQ_TIMEOUT_J as u64);
        let bounded = time_ms.min(timeout_ms);
        let for_time = self.max_budget * bounded as i64 / timeout_ms as i64;
        let e = &mut self.queues[id].e;
        let total = for_time.max(e.service);
        if total > e.budget {
            e.budget = total;
        }
        let extra = (total - e.service).max(0);
        self.bfqq_served(id, extra);
    }

    /// `bfq_update_fin_time_enqueue`.
    fn update_fin_time_enqueue(&mut self, id: QueueId, st: usize, backshifted: bool) {
        let st = self.update_weight_prio(st, id, true);
        let budget = self.queues[id].e.budget;
        self.calc_finish(id, budget);
        let vtime = self.sd.st[st].vtime;
        let q = &mut self.queues[id];
        if backshifted && gt(vtime, q.e.finish) {
            let d = (vtime - q.e.finish) / q.wr_coeff as u64;
            q.e.start = q.e.start.wrapping_add(d);
            q.e.finish = q.e.finish.wrapping_add(d);
        }
        self.active_insert(st, id);
    }

    /// `__bfq_activate_entity`.
    fn activate_entity(&mut self, id: QueueId, non_blocking_wait_rq: bool) {
        let st = self.st_of(id);
        let vtime = self.sd.st[st].vtime;
        let finish = self.queues[id].e.finish;
        let (backshifted, min_vstart) =
            if non_blocking_wait_rq && gt(vtime, finish) { (true, finish) } else { (false, vtime) };
        if self.queues[id].e.tree == super::wf2q::Tree::Idle {
            self.idle_extract(st, id);
            self.queues[id].e.start = if gt(min_vstart, finish) { min_vstart } else { finish };
        } else {
            let e = &mut self.queues[id].e;
            e.start = min_vstart;
            self.sd.st[st].wsum += e.weight as u64;
            e.on_st_or_in_serv = true;
        }
        self.update_fin_time_enqueue(id, st, backshifted);
    }

    /// `__bfq_requeue_entity`.
    fn requeue_entity(&mut self, id: QueueId) {
        let st = self.st_of(id);
        if self.sd.in_service == Some(id) {
            let service = self.queues[id].e.service;
            self.calc_finish(id, service);
            let e = &mut self.queues[id].e;
            e.start = e.finish;
            if e.tree != Tree::None {
                self.active_extract(st, id);
            }
        } else {
            self.active_extract(st, id);
        }
        self.update_fin_time_enqueue(id, st, false);
    }

    /// `bfq_activate_requeue_entity` (one level).
    fn activate_requeue_entity(&mut self, id: QueueId, non_blocking_wait_rq: bool, expiration: bool) {
        let st = self.st_of(id);
        let on_active = self.queues[id].e.tree == Tree::Active;
        let _ = st;
        if self.sd.in_service == Some(id) || on_active {
            self.requeue_entity(id);
        } else {
            self.activate_entity(id, non_blocking_wait_rq);
        }
        self.update_next_in_service(Some(id), expiration);
    }

    /// `__bfq_deactivate_entity`.
    fn deactivate_entity_one(&mut self, id: QueueId, ins_into_idle_tree: bool) -> bool {
        if !self.queues[id].e.on_st_or_in_serv {
            return false;
        }
        let st = self.st_of(id);
        let is_in_service = self.sd.in_service == Some(id);
        let service = self.queues[id].e.service;
        self.calc_finish(id, service);
        if is_in_service {
            self.sd.in_service = None;
        } else {
            self.queues[id].e.service = 0;
        }
        match self.queues[id].e.tree {
            Tree::Active => self.active_extract(st, id),
            Tree::Idle if !is_in_service => self.idle_extract(st, id),
            _ => {}
        }
        if !ins_into_idle_tree || !gt(self.queues[id].e.finish, self.sd.st[st].vtime) {
            self.forget_entity(st, id);
        } else {
            self.idle_insert(st, id);
        }
        true
    }

    /// `bfq_deactivate_entity` (one level).
    fn deactivate_entity(&mut self, id: QueueId, ins_into_idle_tree: bool, expiration: bool) {
        if !self.deactivate_entity_one(id, ins_into_idle_tree) {
            return;
        }
        if self.sd.next_in_service == Some(id) {
            self.update_next_in_service(None, expiration);
        }
    }

    /// `bfq_calc_vtime_jump`: the smallest start of the active tree if
    /// later than the vtime.
    fn calc_vtime_jump(&self, st: usize) -> u64 {
        let t = &self.sd.st[st];
        let min_start = t.active.values().map(|&id| self.queues[id].e.start).reduce(|a, b| if gt(a, b) { b } else { a });
        match min_start {
            Some(m) if gt(m, t.vtime) => m,
            _ => t.vtime,
        }
    }

    /// `bfq_update_vtime`.
    fn update_vtime(&mut self, st: usize, v: u64) {
        if v > self.sd.st[st].vtime {
            self.sd.st[st].vtime = v;
            self.forget_idle(st);
        }
    }

    /// `bfq_first_active_entity`: the eligible entity with the smallest
    /// finish time.
    fn first_active_entity(&self, st: usize, vtime: u64) -> Option<QueueId> {
        self.sd.st[st].active.values().copied().find(|&id| !gt(self.queues[id].e.start, vtime))
    }

    /// `__bfq_lookup_next_entity`.
    fn lookup_next_entity_st(&mut self, st: usize, in_service: bool) -> Option<QueueId> {
        if self.sd.st[st].active.is_empty() {
            return None;
        }
        let new_vtime = self.calc_vtime_jump(st);
        if !in_service {
            self.update_vtime(st, new_vtime);
        }
        self.first_active_entity(st, new_vtime)
    }

    /// `bfq_lookup_next_entity`: the idle class gets a turn at least every
    /// `BFQ_CL_IDLE_TIMEOUT`; otherwise the highest class with an
    /// eligible entity.
    fn lookup_next_entity(&mut self, expiration: bool) -> Option<QueueId> {
        let now_j = self.jif();
        let mut class = 0;
        if now_j > self.sd.class_idle_last_service + CL_IDLE_TIMEOUT_J {
            if !self.sd.st[2].active.is_empty() {
                class = 2;
            }
            self.sd.class_idle_last_service = now_j;
        }
        let in_service = self.sd.in_service.is_some() && !expiration;
        for c in class..3 {
            if let Some(id) = self.lookup_next_entity_st(c, in_service) {
                return Some(id);
            }
        }
        None
    }

    /// `bfq_update_next_in_service`: a new entity takes over without a
    /// lookup if it is in the same class, eligible, and finishes first.
    pub(super) fn update_next_in_service(&mut self, new: Option<QueueId>, expiration: bool) {
        let mut change_without_lookup = false;
        let mut next = self.sd.next_in_service;
        if let Some(n) = new.filter(|&n| Some(n) != self.sd.next_in_service) {
            change_without_lookup = true;
            if let Some(cur) = next {
                let c = self.st_of(n);
                change_without_lookup = c == self.st_of(cur)
                    && !gt(self.queues[n].e.start, self.sd.st[c].vtime)
                    && gt(self.queues[cur].e.finish, self.queues[n].e.finish);
            }
            if change_without_lookup {
                next = Some(n);
            }
        }
        if !change_without_lookup {
            next = self.lookup_next_entity(expiration);
        }
        self.sd.next_in_service = next;
    }

    /// `next_queue_may_preempt`.
    pub(super) fn next_queue_may_preempt(&self) -> bool {
        self.sd.next_in_service != self.sd.in_service
    }

    /// `bfq_get_next_queue`: the next in service becomes in service.
    pub(super) fn get_next_queue(&mut self) -> Option<QueueId> {
        if self.tot_busy_queues() == 0 {
            return None;
        }
        let id = self.sd.next_in_service?;
        self.sd.in_service = Some(id);
        let st = self.st_of(id);
        self.active_extract(st, id);
        self.update_next_in_service(None, false);
        Some(id)
    }

    /// `__bfq_bfqd_reset_in_service`: no queue in service, no idle timer.
    pub(super) fn reset_in_service(&mut self) {
        if let Some(id) = self.in_service.take() {
            self.queues[id].wait_request = false;
        }
        self.idle_timer = None;
        self.sd.in_service = None;
    }

    /// `bfq_activate_bfqq`.
    fn activate_bfqq(&mut self, id: QueueId) {
        let nbw = self.queues[id].non_blocking_wait_rq;
        self.activate_requeue_entity(id, nbw, false);
        self.queues[id].non_blocking_wait_rq = false;
    }

    /// `bfq_requeue_bfqq`.
    pub(super) fn requeue_bfqq(&mut self, id: QueueId, expiration: bool) {
        self.activate_requeue_entity(id, false, expiration);
    }

    /// `bfq_del_bfqq_busy`.
    pub(super) fn del_bfqq_busy(&mut self, id: QueueId, expiration: bool) {
        let c = class_idx(self.queues[id].ioprio_class);
        self.queues[id].busy = false;
        self.busy_queues[c] -= 1;
        if self.queues[id].wr_coeff > 1 {
            self.wr_busy_queues -= 1;
        }
        self.deactivate_entity(id, true, expiration);
        if self.queues[id].dispatched == 0 {
            self.weights_tree_remove(id);
        }
    }

    /// `bfq_add_bfqq_busy`.
    pub(super) fn add_bfqq_busy(&mut self, id: QueueId) {
        self.activate_bfqq(id);
        self.queues[id].busy = true;
        let c = class_idx(self.queues[id].ioprio_class);
        self.busy_queues[c] += 1;
        if self.queues[id].dispatched == 0 && self.queues[id].wr_coeff == 1 {
            self.weights_tree_add(id);
        }
        if self.queues[id].wr_coeff > 1 {
            self.wr_busy_queues += 1;
        }
        // Move to the head of its waker's woken list.
        if let Some(w) = self.queues[id].waker {
            let list = &mut self.queues[w].woken;
            if let Some(i) = list.iter().position(|&q| q == id) {
                list.remove(i);
                list.insert(0, id);
            }
        }
    }

    /// `bfq_weights_tree_add`: count the queue under its weight.
    pub(super) fn weights_tree_add(&mut self, id: QueueId) {
        if self.queues[id].weight_counter.is_some() {
            return;
        }
        let w = self.queues[id].e.weight;
        *self.weights.entry(w).or_insert(0) += 1;
        self.queues[id].weight_counter = Some(w);
    }

    /// `__bfq_weights_tree_remove` / `bfq_weights_tree_remove`.
    pub(super) fn weights_tree_remove(&mut self, id: QueueId) {
        let Some(w) = self.queues[id].weight_counter.take() else { return };
        if let Some(n) = self.weights.get_mut(&w) {
            *n -= 1;
            if *n == 0 {
                self.weights.remove(&w);
            }
        }
    }

    /// `bfq_asymmetric_scenario`: queues of different weights (unless this
    /// one has the smallest), or of different classes, are busy.
    // `multiple_classes` is written as bfq_asymmetric_scenario writes it.
    #[allow(clippy::nonminimal_bool)]
    pub(super) fn asymmetric_scenario(&self, id: Option<QueueId>) -> bool {
        let smallest = id
            .and_then(|q| self.queues[q].weight_counter)
            .is_some_and(|w| self.weights.keys().next() == Some(&w));
        let varied_weights = !smallest && self.weights.len() > 1;
        let b = &self.busy_queues;
        let multiple_classes = (b[0] > 0 && b[1] > 0) || (b[0] > 0 && b[2] > 0) || (b[1] > 0 && b[2] > 0);
        varied_weights || multiple_classes
    }
}

#[cfg(test)]
pub(super) mod tests_support {
    use super::*;
    pub fn weight_to_ioprio_of(w: u32) -> u8 {
        weight_to_ioprio(w)
    }
}
