// examples/oauth with the fixtures worker's build instead of the quickstart's
// (tests/fixtures-worker/build, made by `bash scripts/build.sh fixtures`).
import RustWorker, { McpObject } from '../../fixtures-worker/build/worker/shim.mjs';
import { withBuiltinOAuth } from '../../../examples/oauth/provider.js';

export { McpObject };

export default withBuiltinOAuth(RustWorker);
