// The conversions of contract 0.2.0 (`include!`d beside `shared.rs`, by
// the same includers, for the same reason).

fn execution(e: w::Execution) -> t::Execution {
    t::Execution {
        id: e.id,
        status: e.status,
        result: e.result,
        finished_at: e.finished_at.map(timestamp),
        task: e.task.map(|task| t::TaskRef {
            protocol: match task.protocol {
                w::TaskProtocol::Mcp => t::TaskProtocol::Mcp,
                w::TaskProtocol::A2a => t::TaskProtocol::A2a,
            },
            id: task.id,
        }),
    }
}

fn status_class(c: t::StatusClass) -> w::StatusClass {
    match c {
        t::StatusClass::NonTerminal => w::StatusClass::NonTerminal,
        t::StatusClass::Terminal(o) => w::StatusClass::Terminal(outcome(o)),
        t::StatusClass::AwaitingPerson(t::PersonNeed::Input) => {
            w::StatusClass::AwaitingPerson(w::PersonNeed::Input)
        }
        t::StatusClass::AwaitingPerson(t::PersonNeed::Authorization) => {
            w::StatusClass::AwaitingPerson(w::PersonNeed::Authorization)
        }
    }
}

fn links(links: Vec<t::LinkRef>) -> Vec<w::LinkRef> {
    links
        .into_iter()
        .map(|link| match link {
            t::LinkRef::Execution(id) => w::LinkRef::Execution(id),
            t::LinkRef::Task(task) => w::LinkRef::Task(w::TaskRef {
                protocol: match task.protocol {
                    t::TaskProtocol::Mcp => w::TaskProtocol::Mcp,
                    t::TaskProtocol::A2a => w::TaskProtocol::A2a,
                },
                id: task.id,
            }),
        })
        .collect()
}
