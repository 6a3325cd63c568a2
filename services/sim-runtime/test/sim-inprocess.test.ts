/** The CRI contract against the simulator called in-process. */
import { createSimRuntime } from '../src/simulator.js';
import { runContract } from './contract.js';

runContract('simulator in-process', async () => {
  const sim = createSimRuntime();
  return { rt: sim, sim, close: () => sim.close() };
});
