import { ApiEnv, WorkerEnv, loadEnv } from '@app/config';
import { completionQueueName, completionQueuePrefix } from '@app/contracts';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { waitFor } from '../support/service-stack';
import { e2eStack } from '../support/stack-env';
import { REPO_ROOT, asArray, at, filesUnder, isObject, readYaml, readYamlDocuments } from './deploy-files';
import type { Json, YamlDocument } from './deploy-files';

const KUBERNETES_DIR = resolve(REPO_ROOT, 'deploy/kubernetes');
/** Shown to operators as an example only; `kubectl create secret` makes the real one. */
const NOT_IN_KUSTOMIZATION = ['secret.example.yaml'];

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

/** The offline schemas: kubernetes-models carries Kubernetes' OpenAPI schemas, @kubernetes-models/keda KEDA's CRDs. */
const MODELS: Record<string, () => Promise<ModelClass>> = {
  'v1/Namespace': async () => (await import('kubernetes-models/v1/Namespace')).Namespace,
  'v1/ConfigMap': async () => (await import('kubernetes-models/v1/ConfigMap')).ConfigMap,
  'v1/Secret': async () => (await import('kubernetes-models/v1/Secret')).Secret,
  'v1/Service': async () => (await import('kubernetes-models/v1/Service')).Service,
  'apps/v1/Deployment': async () => (await import('kubernetes-models/apps/v1/Deployment')).Deployment,
  'apps/v1/StatefulSet': async () => (await import('kubernetes-models/apps/v1/StatefulSet')).StatefulSet,
  'autoscaling/v2/HorizontalPodAutoscaler': async () => (await import('kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler')).HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': async () => (await import('kubernetes-models/policy/v1/PodDisruptionBudget')).PodDisruptionBudget,
  'keda.sh/v1alpha1/ScaledObject': async () => (await import('@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject')).ScaledObject,
};

interface Manifest extends YamlDocument {
  kind: string;
  name: string;
  object: Json;
}

const manifests: Manifest[] = filesUnder(KUBERNETES_DIR, ['.yaml', '.yml'])
  .filter((path) => basename(path) !== 'kustomization.yaml')
  .flatMap(readYamlDocuments)
  .map((document) => {
    if (!isObject(document.value)) throw new Error(`${document.file}: a manifest must be a mapping`);
    const object = document.value;
    return { ...document, object, kind: `${String(object.apiVersion)}/${String(object.kind)}`, name: String(at(object, 'metadata', 'name')) };
  });
const ofKind = (kind: string): Manifest[] => manifests.filter((manifest) => manifest.kind === kind);
const deployments = ofKind('apps/v1/Deployment');
const workers = deployments.filter(({ name }) => name.startsWith('worker-'));
const api = deployments.find(({ name }) => name === 'api');

type Container = Json & { name: string };
const containers = (workload: Manifest): Container[] => asArray(at(workload.object, 'spec', 'template', 'spec', 'containers')) as Container[];
/** A container's literal `env` entries (those from fieldRef are left out). */
const literalEnv = (container: Container): Record<string, string> =>
  Object.fromEntries(
    asArray(container.env).flatMap((entry) => (isObject(entry) && typeof entry.value === 'string' ? [[String(entry.name), entry.value]] : [])),
  );
const configMap = (name: string): Record<string, string> =>
  at(ofKind('v1/ConfigMap').find((manifest) => manifest.name === name)?.object, 'data') as Record<string, string>;
const secretExample = (name: string): Record<string, string> =>
  at(ofKind('v1/Secret').find((manifest) => manifest.name === name)?.object, 'stringData') as Record<string, string>;

/** The environment a container sees from its envFrom ConfigMaps and (example) Secrets plus its own env. */
function containerEnvironment(container: Container): Record<string, string> {
  const fromRefs = asArray(container.envFrom).map((source) => {
    if (isObject(source) && isObject(source.configMapRef)) return configMap(String(source.configMapRef.name));
    if (isObject(source) && isObject(source.secretRef)) return secretExample(String(source.secretRef.name));
    throw new Error(`${container.name}: unexpected envFrom ${JSON.stringify(source)}`);
  });
  return Object.assign({}, ...fromRefs, literalEnv(container)) as Record<string, string>;
}

/** Every variable a process reads: an env DTO's instance names them all (each has a default). */
const readsVariables = (envClass: new () => object): Set<string> => new Set(Object.keys(new envClass()));

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  it('every manifest is valid against the Kubernetes and KEDA schemas, offline', async () => {
    expect(manifests.length).toBeGreaterThanOrEqual(10);
    const problems: string[] = [];
    for (const manifest of manifests) {
      const load = MODELS[manifest.kind];
      if (!load) {
        problems.push(`${manifest.file}: ${manifest.kind} has no schema here (add it to MODELS)`);
        continue;
      }
      const Model = await load();
      try {
        new Model(manifest.object as never).validate();
      } catch (error) {
        problems.push(`${manifest.file} ${manifest.kind} ${manifest.name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('the schemas catch a broken manifest (the check is not vacuous)', async () => {
    const Deployment = await MODELS['apps/v1/Deployment']();
    const broken = structuredClone(api?.object) as Json;
    (at(broken, 'spec') as Json).replicas = 'two';
    expect(() => new Deployment(broken as never).validate()).toThrow(/replicas/);
  });

  it('kustomization.yaml lists every manifest file and each one exists', () => {
    const kustomization = readYaml(resolve(KUBERNETES_DIR, 'kustomization.yaml')) as Json;
    expect(kustomization).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization' });
    const listed = asArray(kustomization.resources).map(String);
    for (const file of listed) expect(existsSync(resolve(KUBERNETES_DIR, file))).toBe(true);
    const files = [...new Set(manifests.map(({ file }) => basename(file)))];
    expect([...listed].sort()).toEqual(files.filter((file) => !NOT_IN_KUSTOMIZATION.includes(file)).sort());
    // Every image the manifests name is rewritten to the operator's registry.
    const images = asArray(kustomization.images).map((image) => String(at(image, 'name')));
    for (const workload of [...deployments, ...ofKind('apps/v1/StatefulSet')]) {
      for (const container of containers(workload)) {
        const image = String(container.image);
        if (image.startsWith('queued-chat-completions/')) expect(images).toContain(image);
      }
    }
  });

  it('the API and the workers get only variables they read, with values they accept', () => {
    const apiVariables = readsVariables(ApiEnv);
    const workerVariables = readsVariables(WorkerEnv);
    for (const key of Object.keys(configMap('llm-config'))) expect([key, apiVariables.has(key) || workerVariables.has(key)]).toEqual([key, true]);
    expect(api).toBeDefined();
    for (const container of containers(api as Manifest)) {
      for (const key of Object.keys(literalEnv(container))) expect([key, apiVariables.has(key)]).toEqual([key, true]);
      const env = loadEnv(ApiEnv, containerEnvironment(container));
      expect(env.MODELS).toEqual(expect.arrayContaining(workers.map((worker) => literalEnv(containers(worker)[0]).MODEL_NAME)));
    }
    expect(workers.length).toBeGreaterThanOrEqual(2);
    for (const worker of workers) {
      for (const container of containers(worker)) {
        for (const key of Object.keys(literalEnv(container))) expect([key, workerVariables.has(key)]).toEqual([key, true]);
        const env = loadEnv(WorkerEnv, containerEnvironment(container));
        // llama.cpp's threads spin-wait: never more of them than the cores requested.
        expect(env.ENGINE_THREADS).toBeLessThanOrEqual(Number(at(container, 'resources', 'requests', 'cpu')));
      }
    }
  });

  it("a llama-server sidecar serves what its worker expects: the URL's port, one slot per sequence, their context", () => {
    const withSidecar = workers.filter((worker) => containers(worker).some((container) => container.name === 'llama-server'));
    expect(withSidecar.length).toBeGreaterThanOrEqual(1);
    for (const worker of withSidecar) {
      const [main, sidecar] = [containers(worker)[0], containers(worker).find((container) => container.name === 'llama-server') as Container];
      const env = literalEnv(main);
      const flags = Object.fromEntries(asArray(sidecar.args).map((arg) => String(arg).replace(/^--/, '').split('=') as [string, string]));
      expect(env.ENGINE).toBe('llama-server');
      expect(new URL(env.LLAMA_SERVER_URL)).toMatchObject({ hostname: '127.0.0.1', port: flags.port });
      expect(Number(flags.parallel)).toBe(Number(env.PARALLEL_SEQUENCES));
      expect(Number(flags['ctx-size'])).toBe(Number(env.CONTEXT_SIZE) * Number(env.PARALLEL_SEQUENCES));
      expect(Number(flags.threads)).toBeLessThanOrEqual(Number(at(sidecar, 'resources', 'requests', 'cpu')));
      expect(flags.model).toBe(env.MODEL_PATH);
    }
  });

  it('GPU workers request a GPU; each worker Deployment has a ScaledObject and the API an HPA on CPU', () => {
    const gpuWorkers = workers.filter((worker) => literalEnv(containers(worker)[0]).GPU === 'cuda');
    expect(gpuWorkers.length).toBeGreaterThanOrEqual(1);
    for (const worker of gpuWorkers) {
      const resources = at(containers(worker)[0], 'resources') as Json;
      expect(at(resources, 'limits', 'nvidia.com/gpu')).toBe(1);
    }
    const scaled = ofKind('keda.sh/v1alpha1/ScaledObject').map(({ object }) => String(at(object, 'spec', 'scaleTargetRef', 'name')));
    expect(scaled.sort()).toEqual(workers.map(({ name }) => name).sort());
    const hpa = ofKind('autoscaling/v2/HorizontalPodAutoscaler');
    expect(hpa.map(({ object }) => at(object, 'spec', 'scaleTargetRef'))).toEqual([{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'api' }]);
    expect(at(hpa[0].object, 'spec', 'metrics', 0, 'resource', 'name')).toBe('cpu');
    // CPU utilisation is relative to the request: without one the HPA cannot scale.
    expect(at(containers(api as Manifest)[0], 'resources', 'requests', 'cpu')).toBeDefined();
  });

  it('Redis is configured as BullMQ requires: noeviction and an append-only file', () => {
    const [redis] = ofKind('apps/v1/StatefulSet');
    const args = asArray(containers(redis)[0].args).map(String);
    expect(args[args.indexOf('--maxmemory-policy') + 1]).toBe('noeviction');
    expect(args[args.indexOf('--appendonly') + 1]).toBe('yes');
  });

  describe('against the running stack', () => {
    const stack = e2eStack();

    it('every HTTP probe asks a real health endpoint that answers 200 on a healthy process', async () => {
      const probed: string[] = [];
      for (const workload of [api as Manifest, ...workers]) {
        const [container] = containers(workload);
        const ports = new Map(asArray(container.ports).map((port) => [String(at(port, 'name')), Number(at(port, 'containerPort'))]));
        for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
          if (!isObject(container[probe])) continue;
          const path = String(at(container, probe, 'httpGet', 'path'));
          const port = ports.get(String(at(container, probe, 'httpGet', 'port')));
          // The containers listen where their env says: the API on PORT, a worker on HEALTH_PORT.
          const env = containerEnvironment(container);
          expect(port).toBe(Number(workload === api ? env.PORT : env.HEALTH_PORT));
          const base = workload === api ? new URL(stack.apiUrls[0]).origin : stack.workerHealthUrls[0];
          const response = await fetch(`${base}${path}`);
          expect([`${workload.name} ${probe} ${path}`, response.status]).toEqual([`${workload.name} ${probe} ${path}`, 200]);
          probed.push(`${workload.name} ${probe}`);
        }
      }
      expect(probed).toEqual(expect.arrayContaining(['api readinessProbe', 'api livenessProbe']));
      expect(probed.filter((entry) => entry.startsWith('worker-'))).toHaveLength(workers.length * 3);
    });

    it("each ScaledObject reads its model's BullMQ lists: the wait list fills when a job is queued, the active list while it runs", async () => {
      const scaledObjects = ofKind('keda.sh/v1alpha1/ScaledObject');
      for (const scaledObject of scaledObjects) {
        const target = workers.find(({ name }) => name === at(scaledObject.object, 'spec', 'scaleTargetRef', 'name')) as Manifest;
        const model = literalEnv(containers(target)[0]).MODEL_NAME;
        const lists = Object.fromEntries(
          asArray(at(scaledObject.object, 'spec', 'triggers')).map((trigger) => {
            expect(at(trigger, 'type')).toBe('redis');
            const listName = String(at(trigger, 'metadata', 'listName'));
            return [listName.slice(listName.lastIndexOf(':') + 1), listName];
          }),
        );
        const keyPrefix = `${completionQueuePrefix(model)}:${completionQueueName(model)}`;
        expect(lists).toEqual({ wait: `${keyPrefix}:wait`, active: `${keyPrefix}:active` });
      }

      // The same key layout, seen in real Redis with the BullMQ this service runs, on a model no
      // worker of the stack serves (so nothing else takes the job).
      const model = `keda-probe-${process.pid}`;
      const keyPrefix = `${completionQueuePrefix(model)}:${completionQueueName(model)}`;
      const connection = { url: stack.redisUrl };
      const redis = new Redis(stack.redisUrl);
      const queue = new Queue(completionQueueName(model), { connection, prefix: completionQueuePrefix(model) });
      let release = (): void => undefined;
      const running = new Promise<void>((resolvePromise) => (release = resolvePromise));
      let worker: Worker | undefined;
      try {
        await queue.add('completion', { probe: true });
        expect(await redis.llen(`${keyPrefix}:wait`)).toBe(1);
        expect(await queue.getWaitingCount()).toBe(1);
        worker = new Worker(completionQueueName(model), () => running, { connection, prefix: completionQueuePrefix(model) });
        await waitFor('the job to be active', async () => (await redis.llen(`${keyPrefix}:active`)) === 1);
        expect(await redis.llen(`${keyPrefix}:wait`)).toBe(0);
        release();
        await waitFor('the job to finish', async () => (await redis.llen(`${keyPrefix}:active`)) === 0);
      } finally {
        release();
        await worker?.close();
        await queue.obliterate({ force: true });
        await queue.close();
        redis.disconnect();
      }
    });
  });
});
