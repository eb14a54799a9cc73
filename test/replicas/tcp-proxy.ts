/**
 * A TCP forwarder for outage tests: clients connect to 127.0.0.1:<port> and reach the
 * target. `cut()` destroys every open connection and stops accepting (the database
 * "disappears"); `restore()` listens again on the same port.
 */
import net from 'node:net';

export interface TcpProxy {
  readonly port: number;
  cut(): Promise<void>;
  /** The database stops answering: connections stay open, nothing passes (new ones wait too), until `thaw()`. */
  freeze(): void;
  thaw(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
  /** The most client connections open at once so far. */
  readonly peakConnections: number;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  let frozen = false;
  let open = 0;
  let peak = 0;
  const waiting: net.Socket[] = [];
  const held: Array<() => void> = [];
  const onConnection = (client: net.Socket) => {
    track(client);
    peak = Math.max(peak, ++open);
    client.on('close', () => open--);
    if (frozen) {
      client.pause();
      waiting.push(client);
      return;
    }
    forward(client);
  };
  const forward = (client: net.Socket) => {
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    // Bytes are passed by hand rather than piped, so that a frozen proxy holds them.
    const pass = (from: net.Socket, to: net.Socket) =>
      from.on('data', (chunk: Buffer) => {
        if (frozen) held.push(() => to.write(chunk));
        else to.write(chunk);
      });
    pass(client, upstream);
    pass(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  };

  let server = net.createServer(onConnection);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  const port = await listen(0);

  return {
    port,
    cut: stop,
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const write of held.splice(0)) write();
      for (const client of waiting.splice(0)) {
        client.resume();
        if (!client.destroyed) forward(client);
      }
    },
    async restore() {
      if (server.listening) return;
      server = net.createServer(onConnection);
      await listen(port);
    },
    close: stop,
    get peakConnections() {
      return peak;
    },
  };
}
