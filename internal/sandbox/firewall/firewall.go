// Package firewall keeps the outbound traffic of egress sandboxes off the host, with rules in
// the host's iptables filter table (IPv4 and, where ip6tables works, IPv6).
//
// The user-space network stacks of bwrap sandboxes (slirp4netns) connect out as the sandbox
// uid: GuardUID refuses that uid's connections to the host's own addresses (loopback and
// every address of every interface: iptables' LOCAL address type) and to link-local
// addresses (cloud metadata services), except DNS on port 53, so that a resolver on the
// host's loopback still answers. The sandboxes of the docker backend sit on a bridge of
// agentd's: GuardBridge refuses everything that comes from that bridge to the host itself,
// and what it forwards to link-local addresses.
//
// Rules are added once and only where missing (iptables -C), so several agentd servers and
// their restarts share them; GuardUID's stay (they concern only the sandbox uid), a bridge's
// go with the bridge (Unguard). Each iptables call costs tens of milliseconds, so a process
// adds the rules of one uid or bridge once.
package firewall

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
)

// tool is one of iptables and ip6tables, with the address ranges it refuses.
type tool struct {
	name      string
	linkLocal string
	reject    string // the REJECT that answers a TCP connect at once
}

var (
	v4 = tool{name: "iptables", linkLocal: "169.254.0.0/16", reject: "icmp-port-unreachable"}
	v6 = tool{name: "ip6tables", linkLocal: "fe80::/10", reject: "icmp6-port-unreachable"}
)

// rule is a chain and the match and target to put in it.
type rule struct {
	chain string
	spec  []string
}

var (
	mu   sync.Mutex
	done = map[string]bool{} // what this process made sure of already
)

// GuardUID makes sure the host refuses the connections of uid's sockets to its own addresses
// and to link-local ones, but for DNS. It fails when iptables is missing or refuses: then
// egress cannot be offered safely.
func GuardUID(uid int) error {
	id := strconv.Itoa(uid)
	return guard("uid "+id, func(t tool) []rule {
		chain := "AGENTD-SANDBOX-" + id
		return []rule{
			{chain, []string{"-p", "udp", "--dport", "53", "-j", "RETURN"}},
			{chain, []string{"-p", "tcp", "--dport", "53", "-j", "RETURN"}},
			{chain, []string{"-m", "addrtype", "--dst-type", "LOCAL", "-j", "REJECT", "--reject-with", t.reject}},
			{chain, []string{"-d", t.linkLocal, "-j", "REJECT", "--reject-with", t.reject}},
			{"OUTPUT", []string{"-m", "owner", "--uid-owner", id, "-j", chain}},
		}
	})
}

// GuardBridge makes sure the host refuses whatever arrives on bridge iface for the host
// itself, and forwards nothing from it to link-local addresses or back into it (between
// sandboxes).
func GuardBridge(iface string) error {
	return guard("bridge "+iface, func(t tool) []rule { return bridgeRules(t, iface) })
}

func bridgeRules(t tool, iface string) []rule {
	return []rule{
		{"INPUT", []string{"-i", iface, "-j", "REJECT", "--reject-with", t.reject}},
		{"FORWARD", []string{"-i", iface, "-d", t.linkLocal, "-j", "REJECT", "--reject-with", t.reject}},
		{"FORWARD", []string{"-i", iface, "-o", iface, "-j", "REJECT", "--reject-with", t.reject}},
	}
}

// Unguard removes bridge iface's rules, once the bridge is gone.
func Unguard(iface string) error {
	var errs []error
	for _, t := range []tool{v4, v6} {
		if !t.works() {
			continue
		}
		for _, r := range bridgeRules(t, iface) {
			for t.run(append([]string{"-C", r.chain}, r.spec...)...) == nil {
				if err := t.run(append([]string{"-D", r.chain}, r.spec...)...); err != nil {
					errs = append(errs, err)
					break
				}
			}
		}
	}
	mu.Lock()
	delete(done, "bridge "+iface)
	mu.Unlock()
	return errors.Join(errs...)
}

// guard adds the rules of what, for IPv4 (required) and IPv6 (where ip6tables works).
func guard(what string, rules func(tool) []rule) error {
	mu.Lock()
	defer mu.Unlock()
	if done[what] {
		return nil
	}
	if err := v4.ensure(rules(v4)); err != nil {
		return err
	}
	if v6.works() {
		if err := v6.ensure(rules(v6)); err != nil {
			return err
		}
	}
	done[what] = true
	return nil
}

// ensure creates the chains of rules that are not built in, and adds each rule that is
// missing: those of a chain of its own in order at its end, jumps from built-in chains first
// in them, so nothing before them lets the traffic through.
func (t tool) ensure(rules []rule) error {
	made := map[string]bool{"INPUT": true, "OUTPUT": true, "FORWARD": true}
	for _, r := range rules {
		if !made[r.chain] {
			// An error here is most often "chain already exists"; a real one shows below.
			_ = t.run("-N", r.chain)
			made[r.chain] = true
		}
		if t.run(append([]string{"-C", r.chain}, r.spec...)...) == nil {
			continue
		}
		op := []string{"-A", r.chain}
		if r.chain == "INPUT" || r.chain == "OUTPUT" || r.chain == "FORWARD" {
			op = []string{"-I", r.chain, "1"}
		}
		if err := t.run(append(op, r.spec...)...); err != nil {
			return err
		}
	}
	return nil
}

// works reports whether the tool is installed and answers.
func (t tool) works() bool { return t.run("-S", "OUTPUT") == nil }

// run runs the tool with args, waiting for the xtables lock.
func (t tool) run(args ...string) error {
	path, err := exec.LookPath(t.name)
	if err != nil {
		return fmt.Errorf("%s is not installed: %w", t.name, err)
	}
	var out bytes.Buffer
	cmd := exec.Command(path, append([]string{"-w"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %v: %w: %s", t.name, args, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// Check reports whether the jump to the rules of uid is still in place (a firewall reload
// may have dropped it): one iptables call.
func Check(uid int) error {
	id := strconv.Itoa(uid)
	return v4.run("-C", "OUTPUT", "-m", "owner", "--uid-owner", id, "-j", "AGENTD-SANDBOX-"+id)
}
