package networkpolicy

// OpenHCP patch (dev-infrastructure/kube-network-policies/README.md): the nftables "queue"
// expression needs the kernel's nft_queue, which some kernels are built without (and cannot
// load: no module support). The xtables NFQUEUE target does the same (hand the packet to
// nfqueue QueueID; with bypass, accept it when no program listens) and is reachable from an
// nftables rule through nft_compat, which those kernels have.

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// NFQ_FLAG_BYPASS of <linux/netfilter/xt_NFQUEUE.h>.
const nfqFlagBypass = 0x01

// queueExpr is the rule's last expression: queue to num, and with bypass accept when nothing
// listens on the queue. Revision 3 of the NFQUEUE target takes struct xt_NFQ_info_v3
// {__u16 queuenum; __u16 queues_total; __u16 flags;}, padded to 8 bytes (XT_ALIGN), in host
// byte order.
func queueExpr(num uint16, bypass bool) expr.Any {
	info := make([]byte, 8)
	binary.NativeEndian.PutUint16(info[0:], num)
	binary.NativeEndian.PutUint16(info[2:], 1)
	if bypass {
		binary.NativeEndian.PutUint16(info[4:], nfqFlagBypass)
	}
	u := xt.Unknown(info)
	return &expr.Target{Name: "NFQUEUE", Rev: 3, Info: &u}
}
