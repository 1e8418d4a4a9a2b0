// The step loop both drivers share (drive.mjs, drive-v2.mjs): connects `client` over
// `transport`, runs each step with `run`, and returns the results; a step that throws
// records {"error": message, "code": code, "data": data}, a failed connect goes to
// `errors`.
export async function runSteps(client, transport, steps, run, errors) {
  const results = [];
  try {
    await client.connect(transport);
    for (const step of steps) {
      try {
        results.push(await run(step));
      } catch (e) {
        results.push({
          error: String(e?.message ?? e),
          code: e?.code ?? null,
          data: e?.data ?? null,
        });
      }
    }
  } catch (e) {
    errors.push(`connect: ${e}`);
  }
  return results;
}
