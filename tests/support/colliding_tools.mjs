// Imported into the MCP reference server (`node --import`) by the test of
// cloud tool names: next to `echo` it registers tools whose exported names
// collide once sanitized (`echo.v2`, `echo_v2`) and one past the 64-character
// limit. Each answers with its own name, so a test sees which one was
// called. The path of the SDK module the server uses comes from
// TOOLGATE_MCP_SDK_MODULE, so this patches that very module instance.
const { McpServer } = await import(process.env.TOOLGATE_MCP_SDK_MODULE);
const register = McpServer.prototype.registerTool;
export const ALIASES = ["echo.v2", "echo_v2", "describe_" + "x".repeat(71)];
McpServer.prototype.registerTool = function (name, config, handler) {
  const registered = register.call(this, name, config, handler);
  if (name === "echo") {
    for (const alias of ALIASES) {
      register.call(this, alias, config, async (args) => ({
        content: [{ type: "text", text: `${alias}: ${args.message}` }],
      }));
    }
  }
  return registered;
};
