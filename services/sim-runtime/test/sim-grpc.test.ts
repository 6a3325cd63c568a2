/** The CRI contract through GrpcRuntimeService → serveCri → simulator on a unix socket. */
import { GrpcRuntimeService } from '@splitlet/cri';
import { startSimCri } from '../src/simulator.js';
import { runContract } from './contract.js';

runContract('GrpcRuntimeService → serveCri → simulator', async () => {
  const simCri = await startSimCri();
  const client = await GrpcRuntimeService.connect({ endpoint: simCri.endpoint, connectTimeoutMs: 5000 });
  return {
    rt: client,
    sim: simCri.sim,
    close: async () => {
      client.close();
      await simCri.close();
    },
  };
});
