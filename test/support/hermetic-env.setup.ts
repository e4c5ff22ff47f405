// Before each test file (unit and e2e): nothing the shell set for the service reaches the code
// under test or the processes a test starts. Global setup has read REDIS_URL by then.
import { scrubServiceEnv } from './hermetic-env';

scrubServiceEnv();
