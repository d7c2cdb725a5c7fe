package main

import (
	"fmt"
	"runtime"

	"github.com/valkyria/aio"
)

// layout places an aio TCP workload's server and clients on loops.
type layout int

const (
	// oneLoop: the server and the clients on one loop (libuv's anchors).
	oneLoop layout = iota
	// splitLoops: the server on one loop, the clients on another: two
	// cores, every message crossing from one loop's thread to the other's.
	splitLoops
	// splitLoopsSpin: splitLoops with both loops spinning for -spin after
	// work (Config.Spin), so that a message is picked up without a wakeup.
	splitLoopsSpin
	// perCore: a loop per core (GOMAXPROCS), as aio is deployed: each loop
	// listens on the one port (SO_REUSEPORT, the kernel spreads the
	// connections over the listeners) and runs its share of the clients.
	perCore
)

// loops returns how many loops the layout starts.
func (lay layout) loops() int {
	switch lay {
	case splitLoops, splitLoopsSpin:
		return 2
	case perCore:
		return cores
	}
	return 1
}

// cores is GOMAXPROCS as the process started: the perCore layout's loop
// count, which a section's spare P (reserveProcs) does not change.
var cores = runtime.GOMAXPROCS(0)

// describe says where the server and the clients run, for a row's config.
func (lay layout) describe() string {
	switch lay {
	case splitLoops:
		return "server loop + client loop"
	case splitLoopsSpin:
		return "server loop + client loop, both spinning"
	case perCore:
		return fmt.Sprintf("%d loops (one per core), each a listener on the port (SO_REUSEPORT) + its share of the clients", lay.loops())
	}
	return "one loop: server + clients"
}

// tcpLoops is a layout's loops, started.
type tcpLoops struct {
	rt      *aio.Runtime
	all     []*aio.Loop
	servers []*aio.Loop // where the listeners are
	clients []*aio.Loop // where the clients are, in turn
}

// start starts the layout's loops, named after the workload.
func (lay layout) start(o options, workload string) (*tcpLoops, error) {
	cfgs := make([]aio.Config, lay.loops())
	for i := range cfgs {
		cfgs[i].Name = fmt.Sprintf("%s-%d", workload, i)
		if lay == splitLoopsSpin {
			cfgs[i].Spin = o.Spin
		}
	}
	rt, ls, err := startLoops(cfgs...)
	if err != nil {
		return nil, err
	}
	t := &tcpLoops{rt: rt, all: ls, servers: ls, clients: ls}
	if lay == splitLoops || lay == splitLoopsSpin {
		t.servers, t.clients = ls[:1], ls[1:]
	}
	return t, nil
}

// stop stops the loops (see stopLoops).
func (t *tcpLoops) stop() error { return stopLoops(t.rt, t.all...) }

// listenEcho starts an aio echo server on every server loop, all on one
// port (SO_REUSEPORT when there are several), and returns its address.
func (t *tcpLoops) listenEcho(cfg aio.ListenConfig) (string, error) {
	addr := "127.0.0.1:0"
	cfg.ReusePort = len(t.servers) > 1
	for _, l := range t.servers {
		ln, err := listenEcho(l, addr, cfg)
		if err != nil {
			return "", err
		}
		addr = ln.Addr().String() // the port the first one got
	}
	return addr, nil
}

// share returns loop i's share of n things dealt out over k loops.
func share(n, k, i int) int {
	s := n / k
	if i < n%k {
		s++
	}
	return s
}
