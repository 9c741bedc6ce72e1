// Package nomoscontinue is the runtime's side of nomos-continue: the HTTP
// API a runtime calls (Client), the signed webhook it receives (Receiver,
// an http.Handler), and the A2A push configurations in the A2A JSON shape.
//
// The standard library only. Every method of Client is one operation of
// docs/openapi.json, named after its operationId in Go's case; the ones
// left out on purpose are LeftOut, with why.
package nomoscontinue
