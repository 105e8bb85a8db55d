//! The set of tools one runtime serves, looked up by canonical or exported name.

use std::sync::Arc;

use crate::error::ToolError;
use crate::tool::Tool;

/// Function-calling formats accept only `^[a-zA-Z0-9_-]{1,64}$`, so a dot in a
/// canonical name is exported as `__` (`python.execute` → `python__execute`).
/// This is the one mapping used everywhere; MCP keeps the canonical name.
pub fn exported_name(canonical: &str) -> String {
    canonical.replace('.', "__")
}

#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; a second tool under the same name is a configuration bug.
    pub fn add(&mut self, tool: Arc<dyn Tool>) -> Result<(), String> {
        let name = tool.spec().name.clone();
        if self.get(&name).is_ok() || self.get(&exported_name(&name)).is_ok() {
            return Err(format!("two tools are named {name:?}"));
        }
        self.tools.push(tool);
        Ok(())
    }

    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// Finds a tool by its canonical name or its exported name.
    pub fn get(&self, name: &str) -> Result<&Arc<dyn Tool>, ToolError> {
        self.tools
            .iter()
            .find(|t| t.spec().name == name || exported_name(&t.spec().name) == name)
            .ok_or_else(|| ToolError::unknown_tool(name))
    }
}
