/**
 * A TCP forwarder for outage tests: clients connect to 127.0.0.1:<port> and reach the
 * target. `cut()` destroys every open connection and stops accepting (the database
 * "disappears"); `restore()` listens again on the same port. `freeze()` keeps every
 * connection open and accepts new ones but forwards nothing (a database that hangs:
 * stopped, swapping, behind a dead link); `thaw()` delivers what was held and forwards again.
 */
import net from 'node:net';

export interface TcpProxy {
  readonly port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let frozen = false;
  /** Writes held while frozen, in arrival order. */
  let held: Array<() => void> = [];
  const forward = (from: net.Socket, to: net.Socket) =>
    from.on('data', (chunk) => {
      const write = () => {
        if (!to.destroyed) to.write(chunk);
      };
      if (frozen) held.push(write);
      else write();
    });
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const onConnection = (client: net.Socket) => {
    track(client);
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    forward(client, upstream);
    forward(upstream, client);
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
      const pending = held;
      held = [];
      for (const write of pending) write();
    },
    async restore() {
      if (server.listening) return;
      server = net.createServer(onConnection);
      await listen(port);
    },
    close: stop,
  };
}
