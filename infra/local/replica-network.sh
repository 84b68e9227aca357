#!/usr/bin/env bash
# The replicated local stack's network (see replicas.sh's header for its layout): the members'
# addresses and namespaces, the bridge and each member's veth, the round-trip delay (`tc netem`,
# or orders-netdelay where the kernel has no netem) and its calibration by ping. Sourced by
# replicas.sh; apart from it so that the commands read without the plumbing.
# shellcheck disable=SC2153,SC2154 # LOCAL, REPLICA_* ... come from stack.sh and replicas.sh

replica_ip() { echo "$REPLICA_SUBNET.$1"; } # HOST NUMBER
replica_root_ip() { replica_ip 1; }
replica_ns() { echo "$REPLICA_PREFIX-$1"; } # MEMBER (mongo1, pg2, etcd)
replica_budget_name() { echo "$REPLICA_PREFIX-$1"; }

# Our namespaces that exist now (from this or an earlier run).
replica_namespaces() {
	ip netns list 2>/dev/null | awk '{ print $1 }' |
		grep -E "^$REPLICA_PREFIX-(lan|etcd|mongo[0-9]|pg[0-9]|cal[0-9])\$" || true
}

# Whether this kernel has tc netem (tried on a dummy veth pair in a scratch namespace).
replica_has_netem() {
	if [[ -z "${REPLICA_NETEM:-}" ]]; then
		local ns="$REPLICA_PREFIX-probe"
		REPLICA_NETEM=no
		ip netns add "$ns" 2>/dev/null || true
		if ip -n "$ns" link add p0 type veth peer name p1 2>/dev/null &&
			tc -n "$ns" qdisc add dev p0 root netem delay 1ms 2>/dev/null; then
			REPLICA_NETEM=yes
		fi
		ip netns del "$ns" 2>/dev/null || true
	fi
	[[ "$REPLICA_NETEM" == yes ]]
}

# Microseconds of RTT_MS / DIVISOR.
replica_rtt_us() { awk -v r="$1" -v d="$2" 'BEGIN { printf "%d\n", r * 1000 / d + 0.5 }'; }

replica_network_up() {
	local lan
	lan="$(replica_ns lan)"
	ip netns add "$lan"
	ip -n "$lan" link set lo up
	ip -n "$lan" link add br0 type bridge
	ip -n "$lan" link set br0 up
	ip link add "$REPLICA_ROOT_IF" type veth peer name root netns "$lan"
	ip -n "$lan" link set root master br0 up
	ip addr add "$(replica_root_ip)/24" dev "$REPLICA_ROOT_IF"
	ip link set "$REPLICA_ROOT_IF" up
	if [[ "$REPLICA_DELAY_METHOD" == netem ]] && [[ "$REPLICA_RTT_US" != 0 ]]; then
		tc qdisc add dev "$REPLICA_ROOT_IF" root netem delay "$((REPLICA_RTT_US / 2))us"
	fi
}

# A member's namespace on the bridge with ADDRESS, and its delay: MEMBER ADDRESS.
replica_member_up() {
	local member="$1" address="$2" ns lan
	ns="$(replica_ns "$member")"
	lan="$(replica_ns lan)"
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip -n "$lan" link add "$member" type veth peer name eth0 netns "$ns"
	ip -n "$lan" link set "$member" master br0 up
	ip -n "$ns" addr add "$address/24" dev eth0
	ip -n "$ns" link set eth0 up
	((REPLICA_RTT_US > 0)) || return 0
	case "$REPLICA_DELAY_METHOD" in
	netem) tc -n "$ns" qdisc add dev eth0 root netem delay "$((REPLICA_RTT_US / 2))us" ;;
	nfqueue)
		ip netns exec "$ns" iptables-legacy -w -A OUTPUT -o eth0 -d "$(replica_root_ip)" -j NFQUEUE --queue-num 1
		ip netns exec "$ns" iptables-legacy -w -A OUTPUT -o eth0 -j NFQUEUE --queue-num 0
		mkdir -p "$REPLICA_DIR/$member"
		replica_spawn "$member" "$REPLICA_DIR/$member/netdelay.log" "$REPLICA_NETDELAY" "0:$REPLICA_HALF_US" "1:$REPLICA_ROOT_US"
		;;
	esac
}

# The median round trip, in microseconds, of 20 pings (after a first that resolves the address)
# from namespace NS ("" = the root namespace) to ADDRESS.
replica_ping_us() { # NS ADDRESS
	local -a in_ns=()
	[[ -z "$1" ]] || in_ns=(ip netns exec "$1")
	"${in_ns[@]}" ping -n -c 21 -i 0.02 -W 1 "$2" 2>/dev/null | sed -n 's/.*time=\([0-9.]*\).*/\1/p' | tail -n +2 |
		sort -g | awk '{ t[NR] = $1 } END { if (NR == 0) exit 1; printf "%d\n", t[int((NR + 1) / 2)] * 1000 }'
}

# With orders-netdelay, a packet's trip up to user space and back, and the wake-up that releases
# it, add to the delay held (about 0.1 ms a round trip on a fast machine, 0.3-0.4 ms on a slower
# one, and not the same at every delay). So the delays are calibrated between two scratch members:
# set to rtt/2 each way (rtt towards the root namespace), the round trips are measured, and what
# they took beyond (or short of) the rtt is taken off (or added), until both are within
# REPLICA_CALIBRATION_US of it or CALIBRATION_PASSES have run; the last measurement is printed.
# Sets REPLICA_HALF_US (each way between members) and REPLICA_ROOT_US (members to the root namespace).
REPLICA_CALIBRATION_US=30
CALIBRATION_PASSES=5
replica_calibrate() {
	REPLICA_HALF_US=$((REPLICA_RTT_US / 2))
	REPLICA_ROOT_US="$REPLICA_RTT_US"
	[[ "$REPLICA_DELAY_METHOD" == nfqueue ]] && ((REPLICA_RTT_US > 0)) || return 0
	if ! command -v ping >/dev/null; then
		warn "no ping (Debian: iputils-ping): the delay is not calibrated, round trips will be longer than $REPLICA_RTT ms by what the queueing adds"
		return 0
	fi
	local between to_root pass ns
	replica_member_up cal1 "$(replica_ip 250)"
	replica_member_up cal2 "$(replica_ip 251)"
	for ((pass = 1; pass <= CALIBRATION_PASSES; pass++)); do
		replica_calibration_measure || break
		if replica_calibrated; then
			break
		fi
		((pass < CALIBRATION_PASSES)) || break
		REPLICA_HALF_US=$((REPLICA_HALF_US + (REPLICA_RTT_US - between) / 2))
		REPLICA_ROOT_US=$((REPLICA_ROOT_US + (REPLICA_RTT_US - to_root)))
		((REPLICA_HALF_US >= 0)) || REPLICA_HALF_US=0
		((REPLICA_ROOT_US >= 0)) || REPLICA_ROOT_US=0
		for ns in cal1 cal2; do
			replica_end_namespace "$(replica_ns "$ns")" 5
			replica_spawn "$ns" "$REPLICA_DIR/$ns/netdelay.log" "$REPLICA_NETDELAY" "0:$REPLICA_HALF_US" "1:$REPLICA_ROOT_US"
		done
	done
	for ns in cal1 cal2; do
		ip netns exec "$(replica_ns "$ns")" iptables-legacy -w -F OUTPUT
		replica_end_namespace "$(replica_ns "$ns")" 5
		ip netns del "$(replica_ns "$ns")"
	done
	[[ -n "${between:-}" ]] || return 0
	say "delay calibrated in $pass pass(es): each packet is held ${REPLICA_HALF_US} us between members, ${REPLICA_ROOT_US} us towards the root namespace; measured round trips ${between} us between members, ${to_root} us from the root namespace"
	replica_calibrated ||
		warn "the round trips stay more than ${REPLICA_CALIBRATION_US} us from $REPLICA_RTT ms after $CALIBRATION_PASSES passes (this machine's queueing alone may take longer)"
}

# Whether the last measured round trips (between, to_root) are within REPLICA_CALIBRATION_US of
# the rtt asked for.
replica_calibrated() {
	local off_between=$((between - REPLICA_RTT_US)) off_root=$((to_root - REPLICA_RTT_US))
	((${off_between#-} <= REPLICA_CALIBRATION_US && ${off_root#-} <= REPLICA_CALIBRATION_US))
}

# Measures the scratch members' round trips into between and to_root (microseconds).
replica_calibration_measure() {
	sleep 0.3
	if ! between="$(replica_ping_us "$(replica_ns cal1)" "$(replica_ip 251)")" ||
		! to_root="$(replica_ping_us "" "$(replica_ip 250)")"; then
		warn "could not ping the scratch members: the delay is not calibrated"
		return 1
	fi
}
