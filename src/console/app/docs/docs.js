// Swagger UI over this ops server's own OpenAPI document. The console's key (sessionStorage, set at
// its login) goes with "Try it out" calls, so a signed-in user tries the guarded /api routes as is.
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  requestInterceptor: (request) => {
    const key = sessionStorage.getItem('lattice.apiKey');
    if (key && !request.headers.Authorization) request.headers.Authorization = `Bearer ${key}`;
    return request;
  },
});
