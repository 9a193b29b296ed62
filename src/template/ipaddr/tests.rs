//! Examples from the ansible.utils `ipaddr` documentation.

use serde_json::json;

use crate::template::Templates;

fn render(text: &str) -> String {
    let vars = json!({"test_list": [
        "192.24.2.1", "host.fqdn", "::1", "192.168.32.0/24", "fe80::100/10",
        true, "", "42540766412265424405338506004571095040/64"
    ]});
    Templates::new().render_str(text, &vars).unwrap()
}

#[test]
fn plain_values_are_checked_and_normalised() {
    assert_eq!(render("{{ '192.168.0.1' | ipaddr }}"), "192.168.0.1");
    assert_eq!(
        render("{{ '192.168.32.0/24' | ipaddr }}"),
        "192.168.32.0/24"
    );
    assert_eq!(render("{{ 'fe80::100/10' | ipaddr }}"), "fe80::100/10");
    assert_eq!(render("{{ 45443646733 | ipaddr }}"), "::a:94a7:50d");
    assert_eq!(render("{{ '523454/24' | ipaddr }}"), "0.7.252.190/24");
    for bad in [
        "'localhost'",
        "true",
        "'space bar'",
        "False",
        "''",
        "':'",
        "'fe80:/10'",
    ] {
        assert_eq!(
            render(&format!("{{{{ {bad} | ipaddr }}}}")),
            "False",
            "{bad}"
        );
    }
}

#[test]
fn lists_keep_what_matches() {
    assert_eq!(
        render("{{ test_list | ipaddr | to_json }}"),
        r#"["192.24.2.1", "::1", "192.168.32.0/24", "fe80::100/10", "2001:db8:32c:faad::/64"]"#
    );
    assert_eq!(
        render("{{ test_list | ipv4 | to_json }}"),
        r#"["192.24.2.1", "192.168.32.0/24"]"#
    );
    assert_eq!(
        render("{{ test_list | ansible.utils.ipv6 | to_json }}"),
        r#"["::1", "fe80::100/10", "2001:db8:32c:faad::/64"]"#
    );
    assert_eq!(
        render("{{ test_list | ipaddr('address') | to_json }}"),
        r#"["192.24.2.1", "::1", "fe80::100", "2001:db8:32c:faad::"]"#
    );
    assert_eq!(
        render("{{ test_list | ipaddr('host') | to_json }}"),
        r#"["192.24.2.1/32", "::1/128", "fe80::100/10"]"#
    );
    assert_eq!(
        render("{{ test_list | ipaddr('net') | to_json }}"),
        r#"["192.168.32.0/24", "2001:db8:32c:faad::/64"]"#
    );
    assert_eq!(
        render("{{ test_list | ipv4('ipv6') | to_json }}"),
        r#"["::ffff:192.24.2.1/128", "::ffff:192.168.32.0/120"]"#
    );
    assert_eq!(
        render("{{ test_list | ipaddr('192.0.0.0/8') | to_json }}"),
        r#"["192.24.2.1", "192.168.32.0/24"]"#
    );
}

#[test]
fn network_queries() {
    let q = |query: &str| {
        render(&format!(
            "{{{{ '192.168.0.1/24' | ansible.utils.ipaddr('{query}') }}}}"
        ))
    };
    assert_eq!(q("address"), "192.168.0.1");
    assert_eq!(q("network"), "192.168.0.0");
    assert_eq!(q("netmask"), "255.255.255.0");
    assert_eq!(q("prefix"), "24");
    assert_eq!(q("broadcast"), "192.168.0.255");
    assert_eq!(q("host"), "192.168.0.1/24");
    assert_eq!(q("size"), "256");
    assert_eq!(q("subnet"), "192.168.0.0/24");
    assert_eq!(q("first_usable"), "192.168.0.1");
    assert_eq!(q("last_usable"), "192.168.0.254");
    assert_eq!(q("private"), "192.168.0.1/24");
    assert_eq!(q("next_usable"), "192.168.0.2");
    assert_eq!(q("previous_usable"), "None");
    assert_eq!(q("network_wildcard"), "192.168.0.0 0.0.0.255");
    assert_eq!(q("ip_netmask"), "192.168.0.1 255.255.255.0");
    assert_eq!(q("public"), "None");
    assert_eq!(render("{{ '8.8.8.8' | ipaddr('public') }}"), "8.8.8.8");
    assert_eq!(render("{{ '192.168.0.0/24' | ipaddr('address') }}"), "None");
    assert_eq!(
        render("{{ '10.0.0.0/31' | ipaddr('address') }}"),
        "10.0.0.0"
    );
    assert_eq!(render("{{ '10.0.0.0/31' | ipaddr('broadcast') }}"), "None");
    assert_eq!(
        render("{{ '10.0.0.0/31' | ipaddr('first_usable') }}"),
        "10.0.0.0"
    );
    assert_eq!(
        render("{{ '2001:db8::/64' | ipaddr('address') }}"),
        "2001:db8::"
    );
    assert_eq!(
        render("{{ '10.1.2.3/255.255.0.0' | ipaddr('prefix') }}"),
        "16"
    );
    assert_eq!(
        render("{{ '10.1.2.3/0.0.0.255' | ipaddr('network') }}"),
        "10.1.2.0"
    );
}

#[test]
fn index_queries_count_from_the_network() {
    assert_eq!(
        render("{{ '192.168.0.0/24' | ipaddr('net') | ipaddr('-1') }}"),
        "192.168.0.255/24"
    );
    assert_eq!(
        render("{{ '192.168.0.0/24' | ipaddr(5) }}"),
        "192.168.0.5/24"
    );
    assert_eq!(
        render("{{ '192.168.0.7/24' | ipaddr(0) }}"),
        "192.168.0.0/24"
    );
    assert_eq!(render("{{ '192.168.0.0/24' | ipaddr(256) }}"), "False");
    assert_eq!(render("{{ '192.168.0.9' | ipaddr(3) }}"), "192.168.0.9");
}

#[test]
fn first_usable_wants_a_network_and_unknown_queries_fail() {
    let t = Templates::new();
    assert!(t
        .render_str("{{ '10.0.0.1' | ipaddr('first_usable') }}", &json!({}))
        .is_err());
    assert!(t
        .render_str("{{ '10.0.0.1' | ipaddr('bogus') }}", &json!({}))
        .is_err());
}

#[test]
fn ipwrap_brackets_ipv6_only() {
    assert_eq!(
        render("{{ test_list | ipwrap | to_json }}"),
        r#"["192.24.2.1", "host.fqdn", "[::1]", "192.168.32.0/24", "[fe80::100]/10", true, "", "[2001:db8:32c:faad::]/64"]"#
    );
    assert_eq!(render("{{ '::1' | ansible.utils.ipwrap }}"), "[::1]");
}
