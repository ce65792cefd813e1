// regions.test.mjs against plain `workerd serve`: requests as Cloudflare delivers them.
import './via-workerd.mjs';
import './regions.test.mjs';
