import { engineCpuList, parseCpuList } from './engine-cpus';

describe('ENGINE_CPUS', () => {
  it('reads Linux CPU lists: single CPUs, ranges and both, in order, once each', () => {
    expect(parseCpuList('1')).toEqual([1]);
    expect(parseCpuList('2-5')).toEqual([2, 3, 4, 5]);
    expect(parseCpuList('6,0,2-3,3')).toEqual([0, 2, 3, 6]);
  });

  it('refuses what is not a CPU list, naming it', () => {
    for (const list of ['', 'a', '3-1', '1,', '-2']) expect(() => parseCpuList(list)).toThrow(`"${list}" is not a CPU list`);
  });

  it('refuses more llama.cpp threads than CPUs, which would spin-wait on each other', () => {
    expect(engineCpuList('2-3', 2)).toEqual([2, 3]);
    expect(() => engineCpuList('2-3', 3)).toThrow('ENGINE_THREADS=3 is more than the 2 CPU(s) of ENGINE_CPUS=2-3');
  });
});
