// `npm install`'s last step (package.json's postinstall): the template every first start copies
// its embedded PostgreSQL's cluster from (server/db/cluster-template.ts), and a copy of it made
// ahead, made now so that even the first `npm start` after an install skips initdb. It never fails the install: without a
// template (another OS, a node_modules that cannot be written), a first start runs initdb.
import { prepareClusterTemplate } from '../server/db/embedded.ts';

try {
  const started = performance.now();
  const template = await prepareClusterTemplate({ withSpare: true });
  if (template !== undefined) {
    console.log(
      `cloud-platform: the embedded PostgreSQL's cluster template is ready (${Math.round(performance.now() - started)} ms): ${template}`,
    );
  }
} catch (error) {
  console.warn(`cloud-platform: no cluster template for the embedded PostgreSQL (a first start runs initdb instead): ${String(error)}`);
}
