package podinit

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TableName is the nftables table (family inet: IPv4 and IPv6) that holds a sandbox pod's
// rules.
const TableName = "agentd-sandbox"

// applyRules writes the pod's outbound rules into its network namespace (this process's),
// in one transaction: a chain on the output hook that lets through what goes to the pod's own
// loopback and the packets of connections that exist (the answers to agentd's requests to
// the runtime, which come in), and then, for network none, refuses everything else; for
// egress, lets DNS reach the pod's name servers and refuses new connections to the denied
// prefixes. They hold for every process of the pod, the runtime's included (it reaches MCP
// servers for the sandbox), whatever its uid. A refusal is an ICMP "administratively
// prohibited", so a connect fails at once rather than at its timeout.
func applyRules(opts Options) error {
	var conn []nftables.ConnOption
	if opts.netnsFD > 0 {
		conn = append(conn, nftables.WithNetNSFd(opts.netnsFD))
	}
	c, err := nftables.New(conn...)
	if err != nil {
		return err
	}
	table := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: TableName})
	accept := nftables.ChainPolicyAccept
	chain := c.AddChain(&nftables.Chain{
		Name:     "output",
		Table:    table,
		Type:     nftables.ChainTypeFilter,
		Hooknum:  nftables.ChainHookOutput,
		Priority: nftables.ChainPriorityFilter,
		Policy:   &accept,
	})
	add := func(exprs ...expr.Any) { c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: exprs}) }

	add(append(oifLoopback(), acceptVerdict())...)
	add(append(established(), acceptVerdict())...)
	switch opts.Network {
	case NetworkNone:
		add(reject())
	case NetworkEgress:
		for _, r := range opts.Resolvers {
			for _, proto := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
				add(slices.Concat(daddrIn(netip.PrefixFrom(r, r.BitLen())), l4proto(proto), dport(53), []expr.Any{acceptVerdict()})...)
			}
		}
		for _, p := range opts.Deny {
			add(append(daddrIn(p), reject())...)
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("write the rules: %w", err)
	}
	return nil
}

func acceptVerdict() expr.Any { return &expr.Verdict{Kind: expr.VerdictAccept} }

// reject answers with ICMP(v6) "administratively prohibited".
func reject() expr.Any {
	return &expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED}
}

// oifLoopback matches packets that leave through the loopback device.
func oifLoopback() []expr.Any {
	name := make([]byte, unix.IFNAMSIZ)
	copy(name, "lo")
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
	}
}

// established matches packets of connections conntrack has seen both ways, or related ones.
func established() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{
			SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  binaryutil.NativeEndian.PutUint32(0),
		},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}

// daddrIn matches packets of p's family whose destination is in p.
func daddrIn(p netip.Prefix) []expr.Any {
	proto, offset, size := byte(unix.NFPROTO_IPV4), uint32(16), uint32(4)
	if p.Addr().Is6() && !p.Addr().Is4In6() {
		proto, offset, size = unix.NFPROTO_IPV6, 24, 16
	}
	addr := p.Addr().Unmap().AsSlice()
	mask := make([]byte, size)
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: size},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: size, Mask: mask, Xor: make([]byte, size)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr},
	}
}

func l4proto(proto byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
}

func dport(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
	}
}
