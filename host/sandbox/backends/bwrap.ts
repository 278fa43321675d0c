import { execFileSync } from 'node:child_process';
import { chownSync, rmSync } from 'node:fs';
import type { NetworkFacts, SandboxBackend, SandboxRequest } from '../backend.js';
import { bindsOf, bwrapOptions, EGRESS, GATEWAY, STDOUT_FIFO } from '../bwrapArgs.js';
import { assembleReport, containedLaunch } from '../contain.js';
import type { MachineReport } from '../probe.js';
import { dedicatedIdentity, dedicatedUserns, identityWarnings, usernsPrefix, USERNS_FD } from '../runIdentity.js';

/**
 * The runner's command line behind socat bridges: each serves a host socket bound into the
 * sandbox on a loopback port of the sandbox's own network namespace. The runner starts only once
 * every bridge listens (read from /proc/net/tcp), so its first connection never races the bridge.
 */
function bridgeCommand(bridges: { socket: string; port: number }[], command: string[]): string[] {
  const script = bridges
    .map((b) => {
      const listening = `0100007F:${b.port.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A`;
      return (
        `socat TCP-LISTEN:${b.port},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${b.socket} & p=$!; until grep ` +
        `-q '${listening}' /proc/net/tcp; do kill -0 $p 2>/dev/null || { echo "paddock: the bridge to ${b.socket}` +
        ` did not start" >&2; exit 127; }; sleep 0.005; done;`
      );
    })
    .join(' ');
  return ['/bin/sh', '-c', `${script} exec "$@"`, 'paddock-bridge', ...command];
}

/** A FIFO beside the run's workspace (host side), for {@link SandboxRequest.stdoutFifo}. */
function makeStdoutFifo(workspace: string): string {
  const path = STDOUT_FIFO.source(workspace);
  rmSync(path, { force: true });
  // Node has no mkfifo; coreutils' is at a fixed path, run with a fixed environment.
  execFileSync('/usr/bin/mkfifo', ['-m', '0600', path], { env: {}, stdio: 'ignore' });
  return path;
}

/** The bwrap enforced-lines of this machine's run identity. */
function namespaceLine(machine: MachineReport): string {
  const id = machine.identity;
  return 'error' in id
    ? 'own user, pid, mount, network, ipc, uts and cgroup namespaces; all capabilities dropped; uid/gid 65534 inside'
    : `own user, pid, mount, network, ipc, uts and cgroup namespaces; all capabilities dropped; uid/gid 65534 ` +
        `inside, which is host uid ${id.uid} gid ${id.gid} outside (` +
        (id.mechanism === 'dedicated'
          ? 'a user namespace paddock maps to a dedicated id, ' +
            (id.source === 'default' ? 'the default' : `from ${id.source}`)
          : 'bwrap maps it to the user running paddock') +
        `); no supplementary groups; setuid/setgid bits cleared from files the run leaves in its workspace, ` +
        `session folder and read-write mounts`;
}

/**
 * The bwrap backend: own user, pid, mount, network, ipc, uts and cgroup namespaces; only what the
 * launch binds is visible; the network is loopback only, or the host egress proxy bridged in.
 * Refused (never silently weakened) where bwrap or a usable run identity is missing.
 */
export const bwrapBackend: SandboxBackend = {
  name: 'bwrap',
  strength: 'strong',
  available: (machine) =>
    machine.bwrap.available ? { ok: true } : { ok: false, why: machine.bwrap.why ?? 'bwrap is not available' },
  degradesTo: { backend: 'process', loses: 'without filesystem or network isolation' },
  runIdentity: (machine) => dedicatedIdentity(machine.identity),
  hostIdentity(machine) {
    const id = machine.identity;
    if ('error' in id) return `none usable (${id.error}): runs are refused`;
    return (
      `host uid ${id.uid} gid ${id.gid} (uid 65534 inside): owns every file a run writes; setuid/setgid bits ` +
      `cleared at run end`
    );
  },
  bindsGrants: true,
  gatewayOnSocket: true,
  stdoutFifo: true,
  // bwrap binds the run's workspace, session folder and sockets when it starts.
  warmSlots: false,
  startsEgressProxy: (wantsEgress) => wantsEgress,
  describeNetwork(n: NetworkFacts) {
    if (!n.proxy) return 'none: own network namespace with only loopback';
    const listed = n.allow.length > 0 ? n.allow.join(', ') : 'no listed destination';
    const beyond = n.beyondList ? " and any other the run's policy allows (a rule or a person's approval)" : '';
    return (
      `only through the host egress proxy, to ${listed}${beyond}; names resolved by the host; private and ` +
      `loopback addresses ${n.allowPrivate ? 'allowed' : 'refused'}; every destination audited; while the run is ` +
      'tainted every destination needs a one-time approval; a plain-HTTP request carrying a secret value the host ' +
      'knows is blocked (HTTPS bodies are not seen)'
    );
  },
  report(limits, machine, applied, net = { proxy: false, allow: [], allowPrivate: false }, disk) {
    const id = machine.identity;
    const network = this.describeNetwork(net);
    const own = {
      enforced: [
        namespaceLine(machine),
        'filesystem: only the run workspace, its session folder and rw mounts are writable; read-only system ' +
          'paths (/usr, a few /etc files), the runner folder, its own bundle, node_modules, the harness CLIs and ' +
          'what the binding grants (readPaths, mounts); nothing else of the host is visible (paddock explain ' +
          'lists every bind)',
        `network: ${network}`,
        'the whole process tree dies with the run (pid namespace), setsid escapees included',
      ],
      notEnforced:
        'error' in id
          ? [`a run identity: ${id.error} (bwrap runs are refused)`]
          : identityWarnings(id).map((w) => `an unprivileged host identity: ${w}`),
      privateTmp: [
        `the private /tmp and /dev/shm ≤ ${limits.diskBytes} bytes each (tmpfs size; their pages count ` +
          `against the memory limit); the rest of /dev is read-only`,
      ],
      unbounded: [],
      reportsKillAll: false,
    };
    return assembleReport(this, own, limits, machine, applied, network, disk);
  },
  launchBinds: (request) => bindsOf(bwrapOptions(request)),
  prepare(input, machine) {
    // Fail closed: asking for bwrap on a machine without it throws (the caller refuses the run).
    const available = this.available(machine);
    if (!available.ok) throw new Error(`the bwrap sandbox is not available on this host: ${available.why}`);
    // A root host maps the sandbox to its dedicated run uid through a namespace of its own; an
    // unprivileged host lets bwrap map it to itself (host/sandbox/runIdentity.ts).
    const identity = machine.identity;
    if ('error' in identity)
      throw new Error(`cannot map the sandbox to an unprivileged host identity: ${identity.error}`);
    return containedLaunch(this, input, machine, () => {
      let request: SandboxRequest = input;
      const bridges = [...(request.egressSocket ? [EGRESS] : []), ...(request.gatewaySocket ? [GATEWAY] : [])];
      // Innermost, so only the runner (not the bridges' socat) holds the FIFO as its stdout.
      // bwrapOptions binds it (so `explain` lists it too); here it is made.
      const fifo = request.stdoutFifo ? makeStdoutFifo(request.workspace) : undefined;
      const runnerArgv = fifo
        ? [
            '/bin/sh',
            '-c',
            `exec "$@" >${STDOUT_FIFO.target}`,
            'paddock-stdout',
            request.launch.command,
            ...request.launch.args,
          ]
        : [request.launch.command, ...request.launch.args];
      const inner = bridges.length > 0 ? bridgeCommand(bridges, runnerArgv) : runnerArgv;
      if (request.egressSocket) {
        const proxy = `http://127.0.0.1:${EGRESS.port}`;
        request = {
          ...request,
          launch: {
            ...request.launch,
            env: {
              ...request.launch.env,
              HTTP_PROXY: proxy,
              HTTPS_PROXY: proxy,
              http_proxy: proxy,
              https_proxy: proxy,
            },
          },
        };
      }
      const undo = () => {
        if (fifo) rmSync(fifo, { force: true });
      };
      try {
        const userns = identity.mechanism === 'dedicated' ? dedicatedUserns(identity) : undefined;
        if (fifo) chownSync(fifo, identity.uid, identity.gid); // the runner opens it as its host uid
        const options = bwrapOptions(request, userns ? USERNS_FD : undefined);
        return {
          runner: request.launch,
          bwrap: { path: machine.bwrap.path!, options, inner, prefix: userns ? usernsPrefix(userns) : [] },
          proxy: Boolean(request.egressSocket),
          ...(fifo ? { stdoutFifo: fifo } : {}),
          binds: bindsOf(options),
          identity,
          undo,
        };
      } catch (error) {
        undo();
        throw error;
      }
    });
  },
};
