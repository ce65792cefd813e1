// Imported first by a suite's workerd twin: what it imports next runs
// against plain `workerd serve` (see server.mjs).
process.env.E2E_VIA = 'workerd';
