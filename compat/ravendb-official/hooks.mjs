// Mocha root hooks: one real hilodb server for the whole suite.
import { buildServer, startServer } from '../../js/test/server.mjs';

let server;
let cleanup = async () => {};

export const mochaHooks = {
  async beforeAll() {
    this.timeout(180_000);
    const built = await buildServer();
    cleanup = built.cleanup;
    server = await startServer(built.bin);
    globalThis.__hilodbURL = server.base;
  },
  async afterAll() {
    await server?.stop();
    await cleanup();
  },
};
