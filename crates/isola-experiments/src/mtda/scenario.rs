//! MTDA's workloads (Table IV) as scenarios: its four applications on a
//! BlueField-2's eight Arm cores, 1 to 8 tenants, balanced or unbalanced
//! rates, at 1024-byte packets on a 25 Gbit/s port; and the burst
//! experiment of its Figure 13.
//!
//! Per-packet costs: the applications' costs relative to one another are
//! those of this repository's live operators on 64 KiB batches (`isola bench
//! ops --ops analytics,flow-monitor,ipv4-router,firewall --sizes 64KiB`,
//! 2026-11-22: 53.5, 2.6, 5.0 and 3.4 us); they are scaled so that four
//! tenants at equal packet rates need the eight cores at about 2.6 Mpps
//! (21 Gbit/s at 1024 B), the aggregate MTDA reports for four tenants
//! (Fig. 4(c)), since the Arm cores are far slower than this machine's.

use std::fmt::Write;

/// One of MTDA's applications.
#[derive(Debug, Clone, Copy)]
pub struct App {
    /// Tenant name prefix.
    pub name: &'static str,
    /// The live operator that runs the application.
    pub op: &'static str,
    /// Cost of one 1024-byte packet on one DPU core, ns.
    pub packet_ns: f64,
    /// Its rate in the unbalanced workload (Table IV, in brackets).
    pub unbalanced_rate: f64,
}

/// Real-time analytics, flow monitor, IPv4 router, firewall.
pub const APPS: [App; 4] = [
    App {
        name: "rta",
        op: "analytics",
        packet_ns: 10_200.0,
        unbalanced_rate: 4.0,
    },
    App {
        name: "fm",
        op: "flow-monitor",
        packet_ns: 500.0,
        unbalanced_rate: 2.0,
    },
    App {
        name: "router",
        op: "ipv4-router",
        packet_ns: 960.0,
        unbalanced_rate: 2.0,
    },
    App {
        name: "fw",
        op: "firewall",
        packet_ns: 650.0,
        unbalanced_rate: 1.0,
    },
];

/// The applications' per-packet costs a scenario uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Costs {
    /// [`App::packet_ns`]: the live operators' relative costs (analytics
    /// 10-20x the others).
    Measured,
    /// Every application alike, at the cost MTDA's own figures imply:
    /// Fig. 4(c) gives MTDA 21.02 Gbit/s for four equal tenants at 1024 B
    /// (5.25 Gbit/s, 641.5 kpps each) on the BlueField-2's 8 cores, so one
    /// packet of each application takes 8 / (4 x 641.5k) s = 3.118 us of a
    /// core. The paper gives no per-application cost; its DPDK tenants'
    /// throughputs (3.3-4.4 Gbit/s) say only that they are not 10-20x
    /// apart.
    Paper,
}

/// [`Costs::Paper`]'s per-packet cost, ns (derivation on the variant).
pub const PAPER_PACKET_NS: f64 = 8e9 / (4.0 * 21.02e9 / 4.0 / 8.0 / 1024.0);

impl Costs {
    /// `app`'s cost of one packet on one core, ns.
    pub fn packet_ns(self, app: &App) -> f64 {
        match self {
            Costs::Measured => app.packet_ns,
            Costs::Paper => PAPER_PACKET_NS,
        }
    }

    /// Its name in captions.
    pub fn name(self) -> &'static str {
        match self {
            Costs::Measured => "measured costs",
            Costs::Paper => "the paper's costs (alike, 3.12 us)",
        }
    }
}

/// How a Table IV scenario is built: costs, the native baseline's
/// steering, packet size.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Per-packet costs.
    pub costs: Costs,
    /// `Some(k)`: the cores are fed by RSS (`steering = "rss"`), each
    /// tenant's packets spread over `k` flows (source ports); `None`: the
    /// scheduler's per-tenant channels.
    pub rss_flows: Option<u32>,
    /// Packet size, bytes (the costs are per packet, whatever its size).
    pub packet: u64,
    /// Each tenant's weight is its offered load (packet rate x cost, in
    /// cores), as LogNIC's offline characterisation would measure it; else
    /// every weight is 1.
    pub weights_by_demand: bool,
    /// Packets per request (1: each packet is a request): a batch costs,
    /// carries and is spaced as that many packets, and the queues and RSS
    /// rings hold the same number of packets (1024) in batches.
    pub batch: u32,
    /// With `rss_flows`: each flow is replaced by a new one (a new RSS
    /// hash) after this long, ns (flow churn); `None`: fixed flows.
    pub flow_life_ns: Option<u64>,
    /// iPipe's host migration: the host's cores and the rule; `None`: no
    /// host.
    pub host: Option<Host>,
}

/// iPipe's host, where an actor moves when the DPU is overloaded, and its
/// rule. MTDA gives none of these; each is an assumption (see
/// `super::migration`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Host {
    /// Host cores the moved actors share (as fast as the Arm cores: the
    /// same cycles at the same clock).
    pub cores: u32,
    /// DPU queued work per core above which a tenant moves, ns.
    pub up_ns: u64,
    /// DPU queued work per core below which it moves back, ns.
    pub down_ns: u64,
    /// How often the rule is checked, ns.
    pub every_ns: u64,
    /// The share of its cost a moved request still takes on the Arm
    /// cores (iPipe's runtime there receives and forwards it).
    pub keep: f64,
}

/// The PCIe link a moved request crosses to the host: BlueField-2's Gen4
/// x8 (126 Gbit/s each way; an assumption, the paper names the card, not
/// its link).
const HOST_LINK: &str = "126Gbit/s";

/// The crossing's unit on the link: a whole request (up to a 128-packet
/// batch), so that a request crosses in one piece at the link's rate
/// rather than in 256 B TLPs (the link is a fifth loaded at most, so
/// its per-TLP headers change no verdict, and 512 events a request would
/// make Fig. 12's runs several times longer).
const CROSSING_UNIT: &str = "128KiB";

impl Host {
    /// Its engines: the host's cores and the PCIe crossing to them.
    fn engines(&self) -> String {
        format!(
            "\n[[engine]]\nname = \"host\"\nkind = \"pu\"\nslots = {}\nclock = \"2.5GHz\"\n\
             \n[[engine]]\nname = \"pcie\"\nkind = \"dma\"\nslots = 8\nbandwidth = \"{HOST_LINK}\"\n\
             max_payload = \"{CROSSING_UNIT}\"\n",
            self.cores
        )
    }

    /// A workload's `migrate` key.
    fn migrate(&self) -> String {
        format!(
            "migrate = {{ to = \"host\", via = \"pcie\", up = \"{}ns\", down = \"{}ns\", every = \"{}ns\", keep = {} }}\n",
            self.up_ns, self.down_ns, self.every_ns, self.keep
        )
    }
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            costs: Costs::Measured,
            rss_flows: None,
            packet: 1024,
            weights_by_demand: false,
            batch: 1,
            flow_life_ns: None,
            host: None,
        }
    }
}

/// Packets a queue or an RSS ring holds (DPDK's usual ring, 1024
/// descriptors), and so each tenant's queue here.
const RING_PACKETS: u32 = 1024;

/// Port speed, bits per second, and packet size.
const LINE_BPS: f64 = 25e9;
const PACKET: f64 = 1024.0;
/// DPU cores.
const CORES: u32 = 8;

/// Tenant `i`'s ingress rule: its own UDP destination port, 4000 + `i`,
/// the port the simulator gives tenant `i`'s packets when its workload
/// names no `flow` (so simulated, every packet still goes to the tenant
/// that sent it), and what makes `isola repro mtda-* --live` send each
/// tenant's packets over UDP through isolad (`crate::live_packets`).
fn flow_match(i: usize) -> String {
    format!("match = {{ dst_port = {}, proto = 17 }}\n", 4000 + i)
}

/// Table IV's tenants for `n` tenants: (app, unbalanced rate).
pub fn tenants(n: usize) -> Vec<(App, f64)> {
    let [rta, fm, router, fw] = APPS;
    match n {
        1 => vec![(rta, 1.0)],
        // NOT-2: rt_a (4) + fm (1).
        2 => vec![(rta, 4.0), (fm, 1.0)],
        // Not in Table IV; Figs. 10-12 have three tenants: NOT-4's first three.
        3 => APPS[..3].iter().map(|a| (*a, a.unbalanced_rate)).collect(),
        4 => APPS.iter().map(|a| (*a, a.unbalanced_rate)).collect(),
        // NOT-8: 4 rt_a (4) + 2 fm (2) + router (2) + fw (1).
        _ => [rta, rta, rta, rta, fm, fm, router, fw]
            .iter()
            .map(|a| (*a, a.unbalanced_rate))
            .collect(),
    }
}

/// The scenario for `n` tenants: each tenant offered an equal part of the
/// port's packet rate (balanced) or parts in Table IV's proportions
/// (unbalanced), Poisson, for `duration`.
pub fn table_iv(n: usize, balanced: bool, duration: &str) -> String {
    table_iv_with(n, balanced, duration, &Setup::default())
}

/// [`table_iv`] built as `setup` says.
pub fn table_iv_with(n: usize, balanced: bool, duration: &str, setup: &Setup) -> String {
    let tenants = tenants(n);
    let line_pps = LINE_BPS / 8.0 / setup.packet as f64;
    let batch = setup.batch.max(1);
    // Requests a queue or ring holds: 1024 packets' worth.
    let held = RING_PACKETS.div_ceil(batch);
    let steering = match setup.rss_flows {
        Some(_) if batch > 1 => format!("steering = \"rss\"\nring = {held}\n"),
        Some(_) => "steering = \"rss\"\n".to_string(),
        None => String::new(),
    };
    let flows = setup.rss_flows.map_or(String::new(), |k| {
        let life = setup
            .flow_life_ns
            .map_or(String::new(), |ns| format!("flow_life = \"{ns}ns\"\n"));
        format!("flows = {k}\n{life}")
    });
    let total: f64 = tenants.iter().map(|(_, r)| if balanced { 1.0 } else { *r }).sum();
    let (host_engines, migrate) = setup
        .host
        .map_or((String::new(), String::new()), |h| (h.engines(), h.migrate()));
    let mut s = format!(
        "# MTDA Table IV, {n} tenant(s), {} workload (generated by `isola repro`).\n\
         [run]\nseed = 7\nduration = \"{duration}\"\nwindow = \"1ms\"\nsolo = true\npolicies = [\"fcfs\"]\n\n\
         [[engine]]\nname = \"arm\"\nkind = \"pu\"\nslots = {CORES}\nclock = \"2.5GHz\"\n{steering}",
        if balanced { "balanced" } else { "unbalanced" }
    );
    s.push_str(&host_engines);
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for (i, (app, rate)) in tenants.iter().enumerate() {
        let k = seen.entry(app.name).or_default();
        *k += 1;
        let share = if balanced { 1.0 } else { *rate } / total;
        // Cycles at 2.5 GHz for the request's packets.
        let cycles = setup.costs.packet_ns(app) * 2.5 * f64::from(batch);
        let weight = if setup.weights_by_demand {
            format!(
                "weight = {:.6}\n",
                line_pps * share * setup.costs.packet_ns(app) * 1e-9
            )
        } else {
            String::new()
        };
        let _ = write!(
            s,
            "\n[[tenant]]\nname = \"{}-{k}\"\nqueue_cap = {held}\n{weight}{}[tenant.workload]\nengine = \"arm\"\nop = \"{}\"\n\
             size = \"{}B\"\narrival = {{ poisson = \"{:.0}/s\" }}\nservice = {{ dist = \"cycles\", base = {cycles:.0}, per_byte = 0 }}\n{flows}{migrate}",
            app.name,
            flow_match(i),
            app.op,
            setup.packet * u64::from(batch),
            line_pps * share / f64::from(batch)
        );
    }
    s
}

/// The burst scenario's window, ns: the p99s of Fig. 13 are per window.
pub const BURST_WINDOW_NS: u64 = 100_000_000;

/// MTDA Fig. 13: four tenants (one per application) at a light load, then
/// at `burst_at` the analytics tenant intensifies. Requests are batches of
/// 32 packets (the simulation would otherwise run 90 M packets per
/// policy). Before the burst the four tenants together take `light` of the
/// cores' capacity, a quarter each; from `burst_at` the analytics tenant
/// alone takes `burst_load`.
pub fn burst(duration: &str, burst_at: &str, light: f64, burst_load: f64) -> String {
    burst_with(duration, burst_at, light, burst_load, None)
}

/// [`burst`], with the cores fed by RSS and each tenant's requests over
/// `rss_flows` flows when it is given.
pub fn burst_with(
    duration: &str,
    burst_at: &str,
    light: f64,
    burst_load: f64,
    rss_flows: Option<u32>,
) -> String {
    const BATCH: f64 = 32.0;
    let (steering, flows) = match rss_flows {
        Some(k) => ("steering = \"rss\"\n", format!("flows = {k}\n")),
        None => ("", String::new()),
    };
    let mut s = format!(
        "# MTDA Fig. 13: burst traffic (generated by `isola repro`).\n\
         [run]\nseed = 11\nduration = \"{duration}\"\nwindow = \"{BURST_WINDOW_NS}ns\"\npolicies = [\"fcfs\"]\n\n\
         [[engine]]\nname = \"arm\"\nkind = \"pu\"\nslots = {CORES}\nclock = \"2.5GHz\"\n{steering}"
    );
    for (i, app) in APPS.iter().enumerate() {
        let cost_ns = app.packet_ns * BATCH;
        // Each tenant alone takes `light` / 4 of the cores' time.
        let rate = |load: f64| load * CORES as f64 / 4.0 * 1e9 / cost_ns;
        let arrival = if i == 0 {
            format!(
                "{{ steps = [[\"0s\", \"{:.0}/s\"], [\"{burst_at}\", \"{:.0}/s\"]] }}",
                rate(light),
                rate(burst_load * 4.0)
            )
        } else {
            format!("{{ poisson = \"{:.0}/s\" }}", rate(light))
        };
        let _ = write!(
            s,
            "\n[[tenant]]\nname = \"{}\"\nqueue_cap = 4096\n{}[tenant.workload]\nengine = \"arm\"\nop = \"{}\"\n\
             size = \"{}B\"\narrival = {arrival}\nservice = {{ dist = \"cycles\", base = {:.0}, per_byte = 0 }}\n{flows}",
            app.name,
            flow_match(i),
            app.op,
            (PACKET * BATCH) as u64,
            cost_ns * 2.5
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_scenarios_parse_with_table_iv_tenants() {
        for n in [1, 2, 3, 4, 8] {
            for balanced in [true, false] {
                let text = table_iv(n, balanced, "10ms");
                let s = isola_model::Scenario::parse(&text, "mtda.toml").unwrap();
                assert_eq!(s.tenants.len(), n);
                let setup = Setup {
                    costs: Costs::Paper,
                    rss_flows: Some(4),
                    packet: 256,
                    weights_by_demand: true,
                    batch: 1,
                    flow_life_ns: None,
                    host: None,
                };
                let s = isola_model::Scenario::parse(&table_iv_with(n, balanced, "10ms", &setup), "m.toml")
                    .unwrap();
                assert!(s.tenants.iter().all(|t| t.workload().flows == Some(4)));
                assert!(s.tenants.iter().all(|t| t.slo.weight > 0.0));
                assert!(matches!(
                    s.engines[0].steering,
                    isola_model::scenario::Steering::Rss { .. }
                ));
            }
        }
        let s = isola_model::Scenario::parse(&burst("2s", "1s", 0.4, 0.6), "b.toml").unwrap();
        assert_eq!(s.tenants.len(), 4);
    }

    /// Each tenant's `match` (its own destination port) sends it its own
    /// packets in the simulator: the simulated results are those of the
    /// same scenario without matching, figure for figure, and every tenant
    /// is matched (what a run over packets needs).
    #[test]
    fn ingress_matching_leaves_the_simulated_run_unchanged() {
        let fcfs = isola_model::scenario::PolicyRun {
            name: "fcfs".into(),
            label: "fcfs".into(),
            params: Default::default(),
            split: None,
            on: Vec::new(),
        };
        for text in [table_iv(4, false, "1ms"), burst("20ms", "10ms", 0.4, 0.6)] {
            let matched = isola_model::Scenario::parse(&text, "m.toml").unwrap();
            assert!(matched.tenants.iter().all(|t| t.flow_match.is_some()));
            let ports: std::collections::BTreeSet<_> = matched
                .tenants
                .iter()
                .filter_map(|t| t.flow_match.and_then(|m| m.dst_port))
                .collect();
            assert_eq!(ports.len(), matched.tenants.len(), "one port per tenant");
            let mut plain = matched.clone();
            for t in &mut plain.tenants {
                t.flow_match = None;
            }
            let run = |s: &isola_model::Scenario| isola_sim::run_policy(s, &fcfs, 7, None, None).unwrap();
            let (a, b) = (run(&matched), run(&plain));
            assert!(a.tenants.iter().all(|t| t.completed > 0 && t.unmatched == 0));
            assert_eq!(a, b);
        }
    }
}
