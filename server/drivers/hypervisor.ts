/**
 * The hypervisor driver: the compute backend that runs servers (the instances of the API) and
 * routes public addresses to them. Every method is safe to repeat (an operation's attempt can be
 * run again after a crash): servers are identified by the instance id and addresses by the
 * public IP id, so a repeated create finds what the first attempt made.
 *
 * Failures are TransientBackendError (worth retrying) or PermanentBackendError (refused), with
 * the backend `compute backend`; the backend's own words never leave the driver.
 */
export interface HypervisorDriver {
  createServer(spec: ServerSpec): Promise<ServerReport>;
  startServer(server: ServerRef): Promise<ServerReport>;
  /** An ACPI shutdown, then a hard power-off. */
  stopServer(server: ServerRef): Promise<ServerReport>;
  rebootServer(server: ServerRef): Promise<ServerReport>;
  /** A running server is restarted once; a stopped one stays stopped. The disk never shrinks. */
  resizeServer(server: ServerRef, size: ServerSize): Promise<ServerReport>;
  /** Reinstalls the disk from an image and boots it, with these SSH keys installed. */
  rebuildServer(server: ServerRef, image: { imageId: string; sshKeys: InstalledSshKey[] }): Promise<ServerReport>;
  /** Boots the rescue system with the server's own disk attached. */
  rescueServer(server: ServerRef): Promise<ServerReport>;
  unrescueServer(server: ServerRef): Promise<ServerReport>;
  /** Deletes the server and its disk; a server that does not exist is already deleted. */
  deleteServer(server: ServerRef): Promise<void>;
  /** Replaces the server's inbound allow rules. */
  setFirewall(server: ServerRef, rules: FirewallRuleSpec[]): Promise<void>;
  /** Prepares a console session (identified by `sessionId`) on a running or rescued server. */
  prepareConsole(server: ServerRef, sessionId: string): Promise<ConsoleSession>;
  /**
   * Connects to the server's console for a prepared session: what the server writes goes to
   * `sink.output`, keystrokes go in through the attachment's `input`. The console stays attached
   * across the server's reboots, stops and rescues (it shows what they do) until `detach`, or
   * until the server is deleted (`sink.ended`).
   */
  attachConsole(server: ServerRef, sessionId: string, sink: ConsoleSink): Promise<ConsoleAttachment>;
  /** What the hypervisor sees now, for the servers of these ids that exist (others are left out). */
  describeServers(serverIds: string[]): Promise<ServerReport[]>;

  /** Reserves a public IPv4 address in a region. */
  allocateAddress(address: { addressId: string; regionId: string }): Promise<{ address: string }>;
  /** Routes the address to the server; returns the server as it is now. */
  attachAddress(address: { addressId: string }, server: ServerRef): Promise<ServerReport>;
  /** Stops routing the address to the server; returns the server, or undefined if it is gone. */
  detachAddress(address: { addressId: string }, server: ServerRef): Promise<ServerReport | undefined>;
  /** Gives the address back; one that does not exist is already released. */
  releaseAddress(address: { addressId: string }): Promise<void>;
}

/** A server: the instance id, and its name (what fault rules and logs refer to). */
export interface ServerRef {
  serverId: string;
  name: string;
}

export interface ServerSize {
  vcpus: number;
  memoryMb: number;
  diskGb: number;
}

export interface InstalledSshKey {
  name: string;
  publicKey: string;
}

export interface FirewallRuleSpec {
  protocol: 'tcp' | 'udp' | 'icmp';
  ports: string | null;
  sources: string[];
}

export interface ServerSpec extends ServerRef, ServerSize {
  regionId: string;
  storagePoolId: string;
  networkProfileId: string;
  /** Whether the network profile gives the server public addresses (IPv4 and IPv6). */
  publicNetwork: boolean;
  /** The console the region's hypervisor offers. */
  consoleType: 'vnc' | 'serial';
  imageId: string;
  sshKeys: InstalledSshKey[];
  firewall: FirewallRuleSpec[];
}

export type PowerStatus = 'running' | 'stopped' | 'rescue' | 'crashed';

/** What the hypervisor reports about a server. */
export interface ServerReport {
  serverId: string;
  status: PowerStatus;
  addresses: { private_ipv4: string[]; public_ipv4: string[]; ipv6: string[] };
  /** When the hypervisor made this observation. */
  observedAt: Date;
}

export interface ConsoleSession {
  /** `serial`: a text console (what the server writes to its serial port, and keystrokes to it). */
  consoleType: 'vnc' | 'serial';
}

export interface ConsoleSink {
  /** Text the server wrote to its console (terminal control sequences included). */
  output(text: string): void;
  /** The console is gone for good. */
  ended(reason: 'server_deleted'): void;
}

export interface ConsoleAttachment {
  /** Keystrokes, as a terminal sends them. */
  input(data: string): void;
  detach(): void;
}
