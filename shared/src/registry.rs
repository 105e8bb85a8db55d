//! The set of tools one runtime serves, looked up by canonical or exported
//! name: tools fixed at start-up, plus sources whose tools come and go
//! (each cloud account's MCP server).

use std::sync::Arc;

use crate::error::ToolError;
use crate::tool::Tool;

/// Function-calling formats accept only `^[a-zA-Z0-9_-]{1,64}$`, so a dot in a
/// canonical name is exported as `__` (`python.execute` → `python__execute`).
/// This is the one mapping used everywhere (`/mcp` too, unless set to
/// canonical names: [`McpNames`]).
pub fn exported_name(canonical: &str) -> String {
    canonical.replace('.', "__")
}

/// How `/mcp` names tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum McpNames {
    /// [`exported_name`]s (`python__execute`): what every model provider
    /// takes as a function name, since MCP clients pass names on as they are.
    #[default]
    Portable,
    /// The canonical names (`python.execute`), as HTTP routes use them.
    Canonical,
}

impl McpNames {
    /// The setting's value as configuration spells it.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "portable" => Some(Self::Portable),
            "canonical" => Some(Self::Canonical),
            _ => None,
        }
    }
}

/// Tools that are discovered at run time.
pub trait ToolSource: Send + Sync {
    /// The tools available now, from a cache: never waits on the network.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// Resolves a name this source owns. `None` when the name is not this
    /// source's; an error when it is but cannot be served now (an account
    /// that is down), so the caller learns why.
    fn resolve(&self, name: &str) -> Option<Result<Arc<dyn Tool>, ToolError>>;
    /// Whether the tools are another function's (`peers`), so that a
    /// function describing itself leaves them out.
    fn is_remote(&self) -> bool {
        false
    }
    /// Whether only scripts' calls (code mode) reach these tools: a
    /// function's own transports neither list nor call them.
    fn for_scripts_only(&self) -> bool {
        false
    }
    /// Waits, at most `within`, until the tools are listed at least once
    /// (a source that lists its tools when first needed).
    fn ready(&self, within: std::time::Duration) -> ReadyFuture<'_> {
        let _ = within;
        Box::pin(std::future::ready(()))
    }
}

/// What [`ToolSource::ready`] returns.
pub type ReadyFuture<'a> = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The tools one runtime serves: fixed tools, and sources whose tools come and
/// go.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    sources: Vec<Arc<dyn ToolSource>>,
    mcp_names: McpNames,
}

impl Registry {
    /// An empty registry.
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

    /// Sets how `/mcp` names tools (either name is accepted in calls).
    pub fn set_mcp_names(&mut self, names: McpNames) {
        self.mcp_names = names;
    }

    /// The name `/mcp` lists a tool under.
    pub fn mcp_name(&self, canonical: &str) -> String {
        match self.mcp_names {
            McpNames::Portable => exported_name(canonical),
            McpNames::Canonical => canonical.to_owned(),
        }
    }

    /// Adds a source; a name is looked up in the sources only when no fixed
    /// tool has it.
    pub fn add_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
    }

    /// Every tool served now: the fixed ones, then each source's, less a
    /// source's tool named as a fixed one (either name): calls reach the
    /// fixed tool, so listing both would show one name twice.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.listed(|s| !s.for_scripts_only())
    }

    /// Every tool a script may reach (code mode): [`Self::tools`] and
    /// those kept for scripts.
    pub fn script_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.listed(|_| true)
    }

    /// The fixed tools, then those of the sources `keep` takes.
    fn listed(&self, keep: impl Fn(&dyn ToolSource) -> bool) -> Vec<Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        for s in self.sources.iter().filter(|s| keep(s.as_ref())) {
            all.extend(
                s.tools()
                    .into_iter()
                    .filter(|t| !self.shadowed(&t.spec().name)),
            );
        }
        all
    }

    /// Waits, at most `within`, until every source listed its tools once.
    pub async fn ready(&self, within: std::time::Duration) {
        for s in &self.sources {
            s.ready(within).await;
        }
    }

    /// Whether a fixed tool answers to `name`, canonical or exported.
    fn shadowed(&self, name: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t.spec().name == name || exported_name(&t.spec().name) == name)
    }

    /// The largest request body any tool here takes.
    pub fn max_body_bytes(&self) -> usize {
        self.tools()
            .iter()
            .map(|t| t.max_body_bytes())
            .fold(crate::tool::MAX_BODY_BYTES, usize::max)
    }

    /// This runtime's own tools, without those of peer functions.
    pub fn own_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.listed(|s| !s.is_remote() && !s.for_scripts_only())
    }

    /// Finds a tool by its canonical name or its exported name.
    pub fn get(&self, name: &str) -> Result<Arc<dyn Tool>, ToolError> {
        self.find(name, |s| !s.for_scripts_only())
    }

    /// As [`Self::get`], for a script's call (code mode): the tools kept
    /// for scripts too.
    pub fn get_for_script(&self, name: &str) -> Result<Arc<dyn Tool>, ToolError> {
        self.find(name, |_| true)
    }

    fn find(
        &self,
        name: &str,
        keep: impl Fn(&dyn ToolSource) -> bool,
    ) -> Result<Arc<dyn Tool>, ToolError> {
        if let Some(t) = self
            .tools
            .iter()
            .find(|t| t.spec().name == name || exported_name(&t.spec().name) == name)
        {
            return Ok(t.clone());
        }
        self.sources
            .iter()
            .filter(|s| keep(s.as_ref()))
            .find_map(|s| s.resolve(name))
            .unwrap_or_else(|| Err(ToolError::unknown_tool(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolSpec;
    use crate::tool::testing::Echo;

    fn tool(name: &str) -> Arc<dyn Tool> {
        Arc::new(Echo(ToolSpec {
            name: name.into(),
            ..Default::default()
        }))
    }

    struct Source(Vec<Arc<dyn Tool>>);

    impl ToolSource for Source {
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            self.0.clone()
        }
        fn resolve(&self, name: &str) -> Option<Result<Arc<dyn Tool>, ToolError>> {
            self.0
                .iter()
                .find(|t| t.spec().name == name)
                .map(|t| Ok(t.clone()))
        }
    }

    /// Another function's tools, reached by scripts only.
    struct ForScripts(Source);

    impl ToolSource for ForScripts {
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            self.0.tools()
        }
        fn resolve(&self, name: &str) -> Option<Result<Arc<dyn Tool>, ToolError>> {
            self.0.resolve(name)
        }
        fn is_remote(&self) -> bool {
            true
        }
        fn for_scripts_only(&self) -> bool {
            true
        }
    }

    #[test]
    fn tools_kept_for_scripts_are_neither_listed_nor_called_by_the_rest() {
        let mut r = Registry::new();
        r.add(tool("python.execute")).unwrap();
        r.add_source(Arc::new(ForScripts(Source(vec![tool("ssh_run")]))));
        let names = |ts: Vec<Arc<dyn Tool>>| -> Vec<String> {
            ts.iter().map(|t| t.spec().name.clone()).collect()
        };
        assert_eq!(names(r.tools()), ["python.execute"]);
        assert_eq!(names(r.own_tools()), ["python.execute"]);
        assert_eq!(names(r.script_tools()), ["python.execute", "ssh_run"]);
        assert_eq!(
            r.get("ssh_run").err().unwrap().code,
            crate::error::ErrorCode::UnknownTool
        );
        assert_eq!(r.get_for_script("ssh_run").unwrap().spec().name, "ssh_run");
    }

    #[test]
    fn a_source_tool_named_as_a_fixed_one_is_not_listed_twice() {
        let mut r = Registry::new();
        r.add(tool("python.execute")).unwrap();
        r.add_source(Arc::new(Source(vec![
            tool("python__execute"),
            tool("python__other"),
        ])));
        let names: Vec<String> = r.tools().iter().map(|t| t.spec().name.clone()).collect();
        assert_eq!(names, ["python.execute", "python__other"]);
        assert_eq!(r.own_tools().len(), 2);
        // Calls reach the fixed tool.
        assert_eq!(
            r.get("python__execute").unwrap().spec().name,
            "python.execute"
        );
    }
}
